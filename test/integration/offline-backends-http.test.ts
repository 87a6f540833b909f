import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Availability, Backend } from '../../backends/backend.js';
import { BackendError } from '../../backends/backend.js';
import type { Board } from '../../boards/board-schema.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { type Clock, clockFromFakeTimers } from '../../core/clock.js';
import { createBackends } from '../../harness/backend-registry.js';
import { escapeHtml } from '../../server/bench/pages/html.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { renodeStandinPath } from '../fakes/renode-standin/standin-path.js';
import { type BenchClient, benchClient, exampleFirmware } from './every-board-bench-client.js';

/**
 * Issue 3: a board whose backend cannot run here (QEMU or Renode missing) is listed as offline
 * with the reason, never crashes the server, and its jobs are refused (or fail) with a message
 * saying what to install; every other board keeps working. Over real HTTP on 127.0.0.1:0 with
 * the fake clock of the bench test harness: nothing here waits on host time (the sim boards that
 * stay online run in simulated time, and `app.idle()` waits for their jobs).
 */

const catalog = loadBoardCatalog();
const qemuBoards = catalog.filter((b) => b.backends.qemu).map((b) => b.id);
const simBoards = catalog.filter((b) => b.backends.sim).map((b) => b.id);
const renodeBoards = catalog.filter((b) => b.backends.renode).map((b) => b.id);

/** What the QEMU and Renode backends tell users to install (backends/qemu, backends/renode). */
const QEMU_HINT = 'install qemu-system-arm (apt-get install -y qemu-system-arm)';
const RENODE_HINT = 'install Renode 1.16 (https://renode.io) or set HILBENCH_RENODE';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-offline-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Starts the bench on the harness's fake clock; `backends` gets that clock too, so nothing in
 * the server or its backends reads host time.
 */
async function start(
  config: Omit<Partial<BenchServiceConfig>, 'backends'> & { backends: (clock: Clock) => BenchServiceConfig['backends'] },
): Promise<{ app: BenchTestApp; api: BenchClient }> {
  const fake = createClock(TEST_START_MS);
  const app = await startBenchTestApp({ ...config, fake, backends: config.backends(clockFromFakeTimers(fake)) });
  cleanups.push(() => app.close());
  return { app, api: benchClient(app.url) };
}

/** Firmware blobs stored by the service: a refused upload must store nothing. */
const storedFirmware = (app: BenchTestApp) => {
  const dir = path.join(app.dataDir, 'firmware');
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^[0-9a-f]{64}$/.test(f)) : [];
};

async function jobsTotal(app: BenchTestApp): Promise<number> {
  const stats = (await (await app.request('/api/v1/stats')).json()) as { totals: { jobs_total: number } };
  return stats.totals.jobs_total;
}

/** Runs pico's and uno's hello on the sim backend and expects both done with their banners. */
async function expectSimBoardsWork(app: BenchTestApp, api: BenchClient, token: string) {
  for (const board of simBoards) {
    const { entry, elf } = exampleFirmware(board, 'hello');
    const queued = await api.flash(token, { board, uartSeconds: 0.5 }, elf);
    await app.idle();
    const job = await api.job(token, queued.job_id);
    expect(job.failure, `${board}: ${JSON.stringify(job.failure)}`).toBeNull();
    expect(job).toMatchObject({ state: 'done', stop: { reason: 'elapsed' }, uart: { time_base: 'simulated', dropped_bytes: 0 } });
    expect(job.uart!.text).toMatch(new RegExp(entry.uartPattern));
  }
}

describe('QEMU and Renode missing, --backend auto', () => {
  async function startWithoutEmulators() {
    const missing = path.join(tempDir(), 'not-installed');
    const qemuBinary = path.join(missing, 'qemu-system-arm');
    const renodePath = path.join(missing, 'renode');
    const { app, api } = await start({
      backend: 'auto',
      backends: (clock) => createBackends({ clock, boards: catalog, qemuBinary, renodePath }),
    });
    return { app, api, qemuBinary, renodePath };
  }

  it('lists the QEMU and Renode boards offline with what to install, the sim boards free', async () => {
    const { app, api, qemuBinary, renodePath } = await startWithoutEmulators();
    const boards = new Map((await api.boards()).map((b) => [b.id, b]));
    expect([...boards.keys()].sort()).toEqual(catalog.map((b) => b.id).sort());
    for (const id of qemuBoards) {
      const board = boards.get(id)!;
      expect(board).toMatchObject({ status: 'offline', backend: 'none', lease_expires_at: null, queued_jobs: 0 });
      expect(board.offline_reason).toContain(`no backend can run ${id} here`);
      expect(board.offline_reason).toContain(`qemu: ${qemuBinary} not found: ${QEMU_HINT}`);
    }
    for (const id of renodeBoards) {
      const board = boards.get(id)!;
      expect(board).toMatchObject({ status: 'offline', backend: 'none' });
      expect(board.offline_reason).toContain(`renode: Renode not found (${renodePath}): ${RENODE_HINT}`);
      // Its other backend is named too, so the operator sees every way to bring it online.
      expect(board.offline_reason).toContain('probe: the probe backend is not configured here (it needs a bench file of the real boards: --bench-file)');
    }
    for (const id of simBoards) expect(boards.get(id)).toMatchObject({ status: 'free', backend: 'sim', offline_reason: null });

    // The operator's log says it too: one warning per offline board, with the reason.
    for (const id of [...qemuBoards, ...renodeBoards]) {
      const warnings = app.logger.lines.filter((l) => l.startsWith('warn:') && new RegExp(`\\b${id}\\b`).test(l));
      expect(warnings.length, `warnings about ${id}: ${JSON.stringify(warnings)}`).toBe(1);
      expect(warnings[0]).toContain(boards.get(id)!.offline_reason!);
    }
    for (const id of simBoards) expect(app.logger.lines.filter((l) => l.startsWith('warn:') && l.includes(` ${id} `))).toEqual([]);
  });

  it('reports the offline boards in health, stats and on the home page', async () => {
    const { app, api } = await startWithoutEmulators();
    const offline = qemuBoards.length + renodeBoards.length;
    // docs/bench-api.md: `degraded` only when no board can run (or the database fails); with the
    // sim boards running, the counts are what says some boards are offline.
    expect(await api.health()).toMatchObject({ database: 'ok', boards: { online: simBoards.length, offline } });

    const stats = (await (await app.request('/api/v1/stats')).json()) as { boards: Array<{ id: string; status: string; offline_reason: string | null }> };
    const reasons = new Map((await api.boards()).map((b) => [b.id, b.offline_reason]));
    for (const b of stats.boards) expect({ id: b.id, reason: b.offline_reason }).toEqual({ id: b.id, reason: reasons.get(b.id) });

    const home = await api.page('/');
    for (const id of ['mps2-an385', ...renodeBoards]) {
      // Escaped as the page escapes every value (server/bench/pages/html.ts).
      expect(home).toContain(escapeHtml(reasons.get(id)!));
    }
    expect(home).toContain(escapeHtml(QEMU_HINT));
    expect(home).toContain(escapeHtml(RENODE_HINT));
  });

  it('refuses sessions and flash jobs on an offline board with 503 saying what to install, and stores nothing', async () => {
    const { app, api } = await startWithoutEmulators();
    const token = await api.register('offline');
    for (const [board, hint] of [
      ['mps2-an385', QEMU_HINT],
      ['stm32f4-discovery', RENODE_HINT],
    ] as const) {
      const session = await api.openSessionRefused(token, board);
      expect(session.status).toBe(503);
      expect(session.detail).toEqual(expect.stringContaining(`board ${board} is offline: `));
      expect(session.detail).toEqual(expect.stringContaining(hint));

      // A valid image for the board: the refusal is about the backend, not the upload.
      const flash = await api.flashRefused(token, { board, uartSeconds: 0.5 }, exampleFirmware(board, 'hello').elf);
      expect(flash.status).toBe(503);
      expect(flash.detail).toEqual(expect.stringContaining(`board ${board} is offline: `));
      expect(flash.detail).toEqual(expect.stringContaining(hint));
    }
    expect(storedFirmware(app)).toEqual([]);
    expect(await jobsTotal(app)).toBe(0);
    // Refusals leave nothing held: the board is still just offline.
    expect((await api.boards()).find((b) => b.id === 'mps2-an385')).toMatchObject({ status: 'offline', queued_jobs: 0, lease_expires_at: null });
  });

  it('keeps the boards that can run working: sessions and jobs on the sim boards', async () => {
    const { app, api } = await startWithoutEmulators();
    const token = await api.register('still-online');
    await expectSimBoardsWork(app, api, token);
    const session = await api.openSession(token, 'pico');
    const { entry, elf } = exampleFirmware('pico', 'exit');
    const queued = await api.flash(token, { board: 'pico', uartSeconds: 0.5, session }, elf);
    await app.idle();
    expect(await api.job(token, queued.job_id)).toMatchObject({ state: 'done', session_id: session, stop: { reason: 'exited', exit_code: entry.exitCode } });
    await api.endSession(token, session);
    expect(await jobsTotal(app)).toBe(simBoards.length + 1);
  });
});

describe('--backend qemu on a host without QEMU', () => {
  it('puts every board offline, says degraded, and still serves the API and the pages', async () => {
    const qemuBinary = path.join(tempDir(), 'qemu-system-arm');
    const { app, api } = await start({ backend: 'qemu', backends: (clock) => createBackends({ clock, boards: catalog, qemuBinary }) });
    const boards = await api.boards();
    expect(boards.filter((b) => b.status !== 'offline').map((b) => b.id)).toEqual([]);
    for (const b of boards) {
      expect(b.backend).toBe('qemu');
      // Boards QEMU does not model say so; the others say what to install.
      expect(b.offline_reason).toBe(qemuBoards.includes(b.id) ? `${qemuBinary} not found: ${QEMU_HINT}` : `board ${b.id} has no QEMU machine (backends.qemu)`);
    }
    expect(await api.health()).toMatchObject({ status: 'degraded', database: 'ok', boards: { online: 0, offline: catalog.length } });
    expect(await api.page('/')).toContain(escapeHtml(`${qemuBinary} not found: ${QEMU_HINT}`));

    const token = await api.register('nothing-runs');
    const refused = await api.flashRefused(token, { board: 'pico', uartSeconds: 0.5 }, exampleFirmware('pico', 'hello').elf);
    expect(refused).toMatchObject({ status: 503, detail: 'board pico is offline: board pico has no QEMU machine (backends.qemu)' });
    expect(storedFirmware(app)).toEqual([]);
  });
});

describe('a backend whose availability check throws', () => {
  /** A backend that fails the way a buggy or half-installed one might, before anything runs. */
  function brokenBackend(name: 'qemu' | 'renode', availability: (board: Board) => Promise<Availability>): Backend {
    return {
      name,
      availability,
      open: async (board) => {
        throw new BackendError('unavailable', `${name} cannot open ${board.id} (test backend)`);
      },
    };
  }

  it('does not crash the server: its boards are offline with the error, the rest keep working', async () => {
    const { app, api } = await start({
      backend: 'auto',
      backends: (clock) => ({
        sim: createBackends({ clock, boards: catalog }).sim,
        // Throws synchronously, not as a rejected promise: must be caught all the same.
        qemu: brokenBackend('qemu', () => {
          throw new Error('qemu-system-arm -M help printed garbage');
        }),
        renode: brokenBackend('renode', async () => {
          throw new TypeError("Cannot read properties of undefined (reading 'platform')");
        }),
      }),
    });
    const boards = new Map((await api.boards()).map((b) => [b.id, b]));
    expect(boards.get('mps2-an385')).toMatchObject({ status: 'offline', backend: 'none' });
    expect(boards.get('mps2-an385')!.offline_reason).toContain('qemu: the qemu backend failed its availability check: qemu-system-arm -M help printed garbage');
    expect(boards.get('stm32f4-discovery')!.offline_reason).toContain(
      "renode: the renode backend failed its availability check: Cannot read properties of undefined (reading 'platform')",
    );
    expect(await api.health()).toMatchObject({ database: 'ok', boards: { online: simBoards.length, offline: catalog.length - simBoards.length } });
    expect(await api.page('/')).toContain('failed its availability check');

    const token = await api.register('after-broken-check');
    const refused = await api.flashRefused(token, { board: 'mps2-an385', uartSeconds: 0.5 }, exampleFirmware('mps2-an385', 'hello').elf);
    expect(refused.status).toBe(503);
    expect(refused.detail).toEqual(expect.stringContaining('failed its availability check'));
    await expectSimBoardsWork(app, api, token);
  });
});

describe('an emulator removed after the server started', () => {
  /** An executable script that runs `target`: removing it is "uninstalling" the emulator. */
  function wrapper(dir: string, name: string, target: string): string {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\nexec ${JSON.stringify(target)} "$@"\n`);
    chmodSync(file, 0o755);
    return file;
  }

  it('refuses or fails its jobs with what to install, and leaves the board unheld', async () => {
    const dir = tempDir();
    const qemuBinary = wrapper(dir, 'qemu-system-arm', 'qemu-system-arm');
    const renodePath = wrapper(dir, 'renode', renodeStandinPath);
    const { app, api } = await start({ backend: 'auto', backends: (clock) => createBackends({ clock, boards: catalog, qemuBinary, renodePath }) });
    const before = new Map((await api.boards()).map((b) => [b.id, b]));
    expect(before.get('mps2-an385')).toMatchObject({ status: 'free', backend: 'qemu' });
    expect(before.get('stm32f4-discovery')).toMatchObject({ status: 'free', backend: 'renode' });

    rmSync(qemuBinary);
    rmSync(renodePath);
    const token = await api.register('uninstalled');
    for (const [board, hint] of [
      ['mps2-an385', `${qemuBinary} not found: ${QEMU_HINT}`],
      ['stm32f4-discovery', `Renode not found (${renodePath}): ${RENODE_HINT}`],
    ] as const) {
      const elf = exampleFirmware(board, 'hello').elf;
      // Issue 3 allows either: the bench may notice at submission (503, nothing stored) or when
      // the job opens the device (the job fails as `unavailable`). Both must say what to install.
      const res = await app.request('/api/v1/jobs/flash', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: (() => {
          const form = new FormData();
          form.set('board', board);
          form.set('uart_seconds', '0.5');
          form.set('firmware', new Blob([new Uint8Array(elf)]), 'hello.elf');
          return form;
        })(),
      });
      if (res.status === 503) {
        expect(((await res.json()) as { detail: string }).detail).toContain(hint);
      } else {
        expect(res.status).toBe(200);
        const { job_id } = (await res.json()) as { job_id: string };
        await app.idle();
        const job = await api.job(token, job_id);
        expect(job).toMatchObject({ state: 'failed', uart: null, stop: null, failure: { kind: 'unavailable' } });
        expect(job.failure!.message).toContain(`board ${board} `);
        expect(job.failure!.message).toContain(hint);
      }
      // Nothing is left holding the board: it is free (availability as checked at start) or
      // offline with the same hint (re-checked), never leased or busy.
      const after = (await api.boards()).find((b) => b.id === board)!;
      expect(['free', 'offline']).toContain(after.status);
      expect(after).toMatchObject({ queued_jobs: 0, lease_expires_at: null });
      if (after.status === 'offline') expect(after.offline_reason).toContain(hint);
    }
    await expectSimBoardsWork(app, api, token);
    expect(app.logger.lines.filter((l) => l.startsWith('error:'))).toEqual([]);
  });
});
