import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { BenchBusyError } from '../../clients/bench/bench-errors.js';
import { firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { HilbenchProcesses, until } from '../support/hilbench-processes.js';
import { hilbenchCli } from '../support/compiled-cli.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { AVR_ECHO, avrProgram } from '../support/sim-programs.js';

// A whole lab in processes on loopback (issue 10, "Tests"): two `hilbench serve` replicas on one
// PostgreSQL database with no worker of their own, a `hilbench worker` with a QEMU board dialling
// replica a and one with simulator boards dialling replica b. An agent uses the whole bench API
// through the typed client, each call through either replica: health, boards, stats, sessions
// (open, read, heartbeat, end, a second agent refused), flash jobs on both workers, the live UART
// stream, serial input, and the job records.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-lab-replicas-'));
const ADMIN = 'lab-replicas-admin';
const processes = new HilbenchProcesses();
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  await processes.killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const hello = (board: string) => {
  const entry = loadFirmwareManifest().firmware.find((f) => f.board === board && f.program === 'hello');
  if (!entry) throw new Error(`no hello firmware for ${board}`);
  return new Uint8Array(readFileSync(firmwarePath(entry)));
};

describe('a lab of two replicas on PostgreSQL and two worker processes', () => {
  it('serves the bench API through either replica, jobs running on the QEMU worker and on the simulator worker', { timeout: 240_000 }, async () => {
    const database = await createTestDatabase({ migrated: 'bench' });
    cleanups.push(database.drop);
    // Replica a is given the database by --database-url, replica b by HILBENCH_DATABASE_URL alone:
    // were the variable ignored, b would run on its own SQLite and the replicas would not agree.
    const replica = (name: string, database: { flag: string[]; env?: Record<string, string> }) =>
      processes.start(
        ['serve', ...database.flag, '--no-local-worker', '--no-relay', '--port', '0', '--data-dir', path.join(dir, name), '--admin-token', ADMIN,
          '--worker-heartbeat-seconds', '1', '--worker-offline-after-seconds', '3', '--worker-claim-seconds', '3', '--max-uart-seconds', '600'],
        /bench service on (http:\/\/127\.0\.0\.1:\d+)/,
        database.env ? { env: database.env } : {},
      );
    const urlA = (await replica('a', { flag: ['--database-url', database.url] })).match[1]!;
    const urlB = (await replica('b', { flag: [], env: { HILBENCH_DATABASE_URL: database.url } })).match[1]!;

    const tokenFile = async (serverUrl: string, label: string) => {
      const created = await execa('node', [hilbenchCli, 'worker-token', 'create', '--server', serverUrl, '--admin-token', ADMIN, '--label', label]);
      const file = path.join(dir, `${label}.token`);
      writeFileSync(file, created.stdout.split('\n').at(-1)!.trim(), { mode: 0o600 });
      return file;
    };
    const worker = (serverUrl: string, token: string, backend: string, boards: string) =>
      processes.start(['worker', '--server', serverUrl, '--token-file', token, '--backend', backend, '--boards', boards, '--cache-dir', path.join(dir, `cache-${backend}`)], /hilbench worker .* serving/);
    await worker(urlA, await tokenFile(urlA, 'qemu-pi'), 'qemu', 'netduinoplus2');
    await worker(urlB, await tokenFile(urlB, 'sim-pi'), 'sim', 'pico,uno');

    const anon = { a: new BenchClient({ baseUrl: urlA }), b: new BenchClient({ baseUrl: urlB }) };
    const LAB_BOARDS = ['netduinoplus2', 'pico', 'uno'];
    for (const client of [anon.a, anon.b]) {
      await until(`every lab board free on ${client.baseUrl}`, async () => {
        const boards = await client.boards();
        return LAB_BOARDS.every((id) => boards.find((b) => b.id === id)?.status === 'free');
      });
    }
    expect(await anon.b.health()).toMatchObject({ database: 'ok' });

    const registered = await anon.a.register('lab-agent');
    const alice = { a: anon.a.withToken(registered.token), b: anon.b.withToken(registered.token) };
    const other = anon.a.withToken((await anon.b.register('other-agent')).token);

    // A session opened through b holds the QEMU board on both replicas; its job is submitted
    // through a and runs on the worker dialling a; it is read and streamed through b.
    const session = await alice.b.openSession('netduinoplus2', { idleSeconds: 120, heartbeat: false });
    expect(await alice.a.getSession(session.id)).toMatchObject({ state: 'active' });
    // Another agent, through the other replica, finds the board leased.
    await expect(other.openSession('netduinoplus2', { heartbeat: false })).rejects.toBeInstanceOf(BenchBusyError);
    expect(await alice.a.heartbeat(session.id)).toMatchObject({ state: 'active', board: 'netduinoplus2' });
    const onQemu = await alice.a.submitFlash('netduinoplus2', hello('netduinoplus2'), { sessionId: session.id, uartSeconds: 1 });
    let streamed = '';
    for await (const event of alice.b.uart(onQemu.job_id)) {
      if (event.kind === 'uart') streamed += event.text;
      else expect(event.job).toMatchObject({ state: 'done' });
    }
    expect(streamed).toMatch(/^hilbench hello board=netduinoplus2\r\ntick 1/);
    expect(await alice.a.getJob(onQemu.job_id)).toMatchObject({ state: 'done', uart: { text: streamed } });
    expect(await alice.b.endSession(session.id)).toMatchObject({ state: 'ended' });

    // A job without a session, through a, on the simulator worker dialling b.
    const onSim = await alice.a.flash('pico', hello('pico'), { uartSeconds: 1 });
    expect(onSim).toMatchObject({ state: 'done', uart: { text: expect.stringMatching(/^hilbench hello board=pico\r\ntick 1/) } });

    // Serial input sent through a reaches the echo firmware on the worker dialling b.
    const echoSession = await alice.a.openSession('uno', { idleSeconds: 120, heartbeat: false });
    const echo = await alice.b.submitFlash('uno', avrProgram(AVR_ECHO).bytes, { sessionId: echoSession.id, uartSeconds: 600 });
    await until(`job ${echo.job_id} running`, async () => (await alice.a.getJob(echo.job_id)).state === 'running');
    const input = 'through replica a\n';
    await alice.a.writeUart(echo.job_id, input);
    const heard = await alice.b.waitForUart(echo.job_id, input, { timeoutMs: 60_000 });
    expect(heard).toMatchObject({ matched: true });
    await alice.b.endSession(echoSession.id);
    await until(`job ${echo.job_id} to end with its session`, async () => ['done', 'failed'].includes((await alice.a.getJob(echo.job_id)).state));

    // Both replicas count the same jobs.
    for (const url of [urlA, urlB]) {
      const stats = (await (await fetch(`${url}/api/v1/stats`)).json()) as { totals: { agents: number; jobs_total: number } };
      expect(stats.totals, url).toMatchObject({ agents: 2, jobs_total: 3 });
    }
  });
});
