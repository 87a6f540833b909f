import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TimeBase } from '../../backends/backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { createBackends } from '../../harness/backend-registry.js';
import type { FirmwareEntry } from '../../firmware/examples/firmware-manifest.js';
import type { JobBody } from '../../wire/bench/bench-schemas.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { renodeStandinPath } from '../fakes/renode-standin/standin-path.js';
import { type BenchClient, benchClient, exampleFirmware } from './every-board-bench-client.js';

/**
 * Issue 3, "done when": for every board in the catalog, flashing its example ELF through the
 * HTTP API returns the expected UART text, on the backend `--backend auto` picks for it here
 * (sim for pico and uno, qemu-system-arm for the QEMU machines, Renode, through the stand-in,
 * for stm32f4-discovery). And "one behaviour on every backend": capture starts before reset is
 * released (the banner is the first thing captured), every chunk is stamped relative to reset
 * release in the time base the job names, nothing is dropped, and exit and crash are reported
 * as `exited` / `crashed` where the backend can tell.
 *
 * The server runs in process on 127.0.0.1:0 with the real clock: emulators run in host time.
 * No assertion is about speed; the only waits are bounded polls of the job.
 */

const catalog = loadBoardCatalog();

/** The clock each backend says its UART stamps and `uart_seconds` are in (docs/backends/*.md). */
const timeBaseOf: Record<FirmwareEntry['backend'], TimeBase> = { sim: 'simulated', qemu: 'wall', renode: 'wall' };

/** Board time between two `tick N` lines of the hello program (docs/firmware.md). */
const TICK_SECONDS = 0.1;

/**
 * How long to capture hello for. Simulated time is exact: the banner comes at reset and tick N at
 * N × 100 ms of board time, so the pattern's ticks plus two more periods suffice. Wall time also
 * has to cover emulator start-up after release and a loaded host: the contract suite measured
 * the banner and three ticks 0.23-0.74 s after release on an idle host, but QEMU runs SysTick in
 * host time and a busy 2-core host delivers fewer ticks (docs/firmware.md: 7-8 per second; here
 * a 1 s window once caught only two), so wall-time boards get 2 s.
 */
function helloUartSeconds(entry: FirmwareEntry): number {
  const ticks = (entry.uartPattern.match(/tick \d+/g) ?? []).length;
  if (ticks === 0) throw new Error(`the hello pattern of ${entry.board} names no ticks: ${entry.uartPattern}`);
  return timeBaseOf[entry.backend] === 'simulated' ? (ticks + 2) * TICK_SECONDS : Math.max(2, (ticks + 5) * TICK_SECONDS);
}

/** exit and crash stop by themselves within milliseconds; the window only bounds a run that does not. */
const stopsByItselfUartSeconds = (entry: FirmwareEntry) => (timeBaseOf[entry.backend] === 'simulated' ? 0.5 : 3);

/** Host budget for a job to settle: the dispatcher's own deadline is 60 s + 4 s per UART second + 10 s. */
const JOB_TIMEOUT_MS = 90_000;

/**
 * At most this many jobs at once: each emulator keeps a core busy (the firmware spins), and on
 * an oversubscribed host QEMU's host-timed SysTick delivers fewer ticks per wall second.
 * Different boards never share a device, so jobs on different boards can run side by side.
 */
const limit = concurrencyLimit(Math.max(1, availableParallelism()));

/**
 * One job per board at a time: a job without a session leases its board for its own duration,
 * so a second one on the same board is refused with 409 (docs/bench-api.md) rather than queued.
 * The hello and the exit/crash suites run side by side, so they take turns per board.
 */
const boardLocks = new Map<string, ReturnType<typeof concurrencyLimit>>();
const boardLock = (board: string) => boardLocks.get(board) ?? boardLocks.set(board, concurrencyLimit(1)).get(board)!;

let app: BenchTestApp;
let api: BenchClient;
let token: string;

beforeAll(async () => {
  app = await startBenchTestApp({
    clock: systemClock,
    backend: 'auto',
    backends: createBackends({ clock: systemClock, boards: catalog, renodePath: renodeStandinPath }),
  });
  api = benchClient(app.url);
  token = await api.register('every-board');
});

afterAll(async () => {
  await app?.close();
});

describe('GET /api/v1/boards with --backend auto', () => {
  it('puts every catalog board online on the backend that runs its example firmware', async () => {
    const boards = await api.boards();
    expect(boards.map((b) => b.id).sort()).toEqual(catalog.map((b) => b.id).sort());
    for (const board of boards) {
      const { entry } = exampleFirmware(board.id, 'hello');
      expect({ id: board.id, backend: board.backend, status: board.status, offline_reason: board.offline_reason }).toEqual({
        id: board.id,
        backend: entry.backend,
        status: 'free',
        offline_reason: null,
      });
    }
    expect(await api.health()).toMatchObject({ status: 'ok', boards: { online: catalog.length, offline: 0 } });
  });
});

/** Flashes `program` on `board` through the API and waits for the job to settle. */
async function runExample(board: string, program: 'hello' | 'exit' | 'crash', uartSeconds: (entry: FirmwareEntry) => number) {
  const { entry, elf } = exampleFirmware(board, program);
  const job = await boardLock(board)(() =>
    limit(async () => {
      const queued = await api.flash(token, { board, uartSeconds: uartSeconds(entry) }, elf);
      expect(queued).toMatchObject({ board, state: 'queued', uart_seconds: uartSeconds(entry), uart: null, stop: null, failure: null });
      const settled = await api.settled(token, queued.job_id, { timeoutMs: JOB_TIMEOUT_MS });
      // Read while this board is still ours: the job's own lease must have ended with it.
      const boardAfter = (await api.boards()).find((b) => b.id === board);
      return { settled, boardAfter };
    }),
  );
  expect(job.boardAfter).toMatchObject({ status: 'free', queued_jobs: 0, lease_expires_at: null });
  return { entry, job: job.settled };
}

/** What every finished job must show, whatever the program and backend. */
function expectOneBehaviour(job: JobBody, entry: FirmwareEntry) {
  expect(job.failure, `job failed: ${JSON.stringify(job.failure)}`).toBeNull();
  expect(job.state).toBe('done');
  const uart = job.uart!;
  const stop = job.stop!;
  // The manifest's patterns are anchored at the start: the banner is the first byte captured,
  // so capture was attached before the core left reset.
  expect(uart.text).toMatch(new RegExp(entry.uartPattern));
  expect(uart.time_base).toBe(timeBaseOf[entry.backend]);
  expect(uart.dropped_bytes).toBe(0);
  expect(Buffer.from(uart.base64, 'base64').toString('utf8')).toBe(uart.text);
  expect(uart.bytes).toBe(Buffer.from(uart.base64, 'base64').length);
  // Chunks are the capture in order: their texts add up to the whole text, or to its start when
  // more than maxUartChunksPerJob arrived (the Renode stand-in delivers byte by byte).
  const joined = uart.chunks.map((c) => c.text).join('');
  if (uart.chunks_omitted === 0) expect(joined).toBe(uart.text);
  else expect(uart.text.startsWith(joined)).toBe(true);
  const stamps = uart.chunks.map((c) => c.at_seconds);
  expect(stamps.length).toBeGreaterThan(0);
  // Relative to reset release, in the job's time base: from 0 and never backwards.
  expect(stamps[0]).toBeGreaterThanOrEqual(0);
  for (let i = 1; i < stamps.length; i++) expect(stamps[i], `chunk ${i} is stamped before chunk ${i - 1}: ${stamps.join(', ')}`).toBeGreaterThanOrEqual(stamps[i - 1]!);
  // In simulated time nothing is printed after the stop. In wall time the last bytes can reach
  // the host a millisecond after the emulator's exit was seen, so this holds only for the sim.
  if (uart.time_base === 'simulated') expect(stamps.at(-1)).toBeLessThanOrEqual(stop.elapsed_seconds);
}

/** The `at_seconds` of the chunk holding the first character of `needle` in the capture. */
function stampOf(job: JobBody, needle: string): number {
  const at = job.uart!.text.indexOf(needle);
  if (at < 0) throw new Error(`${JSON.stringify(needle)} is not in the capture: ${JSON.stringify(job.uart!.text)}`);
  let offset = 0;
  for (const chunk of job.uart!.chunks) {
    if (at < offset + chunk.text.length) return chunk.at_seconds;
    offset += chunk.text.length;
  }
  throw new Error(`offset ${at} is past the chunks`);
}

describe.concurrent('every board runs its hello.elf through POST /api/v1/jobs/flash', () => {
  for (const board of catalog) {
    const backend = exampleFirmware(board.id, 'hello').entry.backend;
    it(`${board.id} (${backend})`, { timeout: JOB_TIMEOUT_MS * 2 }, async () => {
      const { entry, job } = await runExample(board.id, 'hello', helloUartSeconds);
      expectOneBehaviour(job, entry);
      // hello never stops by itself: the run ends when uart_seconds of its time base have passed.
      expect(job.stop).toEqual({ reason: 'elapsed', elapsed_seconds: expect.any(Number) });
      expect(job.stop!.elapsed_seconds).toBeGreaterThanOrEqual(helloUartSeconds(entry) - 1e-9);
      expect(stampOf(job, 'tick 1')).toBeGreaterThanOrEqual(stampOf(job, 'hilbench hello'));
      if (timeBaseOf[entry.backend] === 'simulated') {
        // Simulated time is the chip's, exact whatever the host's load: tick N is printed in the
        // N-th 100 ms period after reset, the banner in the first.
        expect(stampOf(job, 'hilbench hello')).toBeLessThan(TICK_SECONDS);
        for (const n of [1, 2, 3]) {
          expect(stampOf(job, `tick ${n}\r\n`)).toBeGreaterThanOrEqual(n * TICK_SECONDS);
          expect(stampOf(job, `tick ${n}\r\n`)).toBeLessThan((n + 1) * TICK_SECONDS);
        }
      }
    });
  }
});

/** One board per backend, plus both sim engines (rp2040js and avr8js stop differently). */
const stopBoards = ['pico', 'uno', 'mps2-an385', 'stm32f4-discovery'];

describe.concurrent('exit and crash firmware through the HTTP API, one board per backend', () => {
  for (const boardId of stopBoards) {
    const backend = exampleFirmware(boardId, 'exit').entry.backend;
    if (backend === 'renode') {
      it(`${boardId} (${backend}): exit.elf prints its line but is never reported as exited`, { timeout: JOB_TIMEOUT_MS * 2 }, async () => {
        const { entry, job } = await runExample(boardId, 'exit', stopsByItselfUartSeconds);
        expectOneBehaviour(job, entry);
        // docs/backends/renode.md: Renode has no firmware-decided exit. Without a debugger the
        // semihosting BKPT faults and the core locks up (docs/firmware.md), which the stand-in
        // reports as a CPU abort; a Renode that does not log the lockup would run to `elapsed`.
        expect(['crashed', 'elapsed']).toContain(job.stop!.reason);
      });
    } else {
      it(`${boardId} (${backend}): exit.elf is done with stop exited and the firmware's code`, { timeout: JOB_TIMEOUT_MS * 2 }, async () => {
        const { entry, job } = await runExample(boardId, 'exit', stopsByItselfUartSeconds);
        expect(entry.outcome).toBe('exits');
        expectOneBehaviour(job, entry);
        expect(job.stop).toEqual({ reason: 'exited', exit_code: entry.exitCode, elapsed_seconds: expect.any(Number) });
        expect(job.stop!.exit_code).toBe(3);
        expect(job.stop!.elapsed_seconds).toBeLessThan(stopsByItselfUartSeconds(entry));
      });
    }
    it(`${boardId} (${backend}): crash.elf is done with stop crashed and a message`, { timeout: JOB_TIMEOUT_MS * 2 }, async () => {
      const { entry, job } = await runExample(boardId, 'crash', stopsByItselfUartSeconds);
      expect(entry.outcome).toBe('crashes');
      expectOneBehaviour(job, entry);
      expect(job.stop).toEqual({ reason: 'crashed', message: expect.any(String), elapsed_seconds: expect.any(Number) });
      expect(job.stop!.message!.trim()).not.toBe('');
      expect(job.stop!.elapsed_seconds).toBeLessThan(stopsByItselfUartSeconds(entry));
    });
  }
});

describe('after the jobs', () => {
  it('leaves every board free and no emulator process behind', async () => {
    await app.idle();
    const boards = await api.boards();
    expect(boards.filter((b) => b.status !== 'free').map((b) => `${b.id}: ${b.status}`)).toEqual([]);
    expect(emulatorDescendants(process.pid)).toEqual([]);
    // Every job this file submitted finished `done`: none failed or is still queued or running.
    const stats = (await (await app.request('/api/v1/stats')).json()) as { totals: { jobs_total: number; jobs_by_state: Record<string, number> } };
    const expectedJobs = catalog.length + stopBoards.length * 2;
    expect(stats.totals.jobs_total).toBe(expectedJobs);
    expect(Object.fromEntries(Object.entries(stats.totals.jobs_by_state).filter(([, n]) => n > 0))).toEqual({ done: expectedJobs });
  });
});

/** A promise queue: runs at most `max` tasks at once, in the order they were submitted. */
function concurrencyLimit(max: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    // A finishing task hands its slot straight to the next waiter, so `active` never overshoots.
    if (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** qemu-system-arm and Renode stand-in processes below `rootPid` (from `ps`), as "pid command". */
function emulatorDescendants(rootPid: number): string[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }));
  const below = new Set([rootPid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const row of rows) {
      if (below.has(row.ppid) && !below.has(row.pid)) {
        below.add(row.pid);
        grew = true;
      }
    }
  }
  return rows.filter((r) => r.pid !== rootPid && below.has(r.pid) && /qemu-system|renode/.test(r.args) && !/\bps\b/.test(r.args)).map((r) => `${r.pid} ${r.args}`);
}
