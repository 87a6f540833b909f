import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { QemuBackend } from '../../backends/qemu/qemu-backend.js';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { finalErrorReply, runRemoteDebugSession } from '../../bin/debug-on-server.js';
import { DebugRefused, DebugStreamClient } from '../../bin/debug-stream-client.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import type { Backend } from '../../backends/backend.js';
import type { BackendChoice } from '../../harness/board-resolution.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { allFactsHold, debugElf, gdbBatch, walkThroughFacts, walkThroughSession } from '../support/gdb-batch.js';
import { createWorkerToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { bearer, flash } from './bench-job-requests.js';
import { DebugLegRefused, dialDebugLeg } from '../../clients/bench/debug-leg.js';
import { hilbenchCli } from '../support/compiled-cli.js';

/**
 * GDB through a bench server and a remote worker (issue 32, decisions 0560, 0910): the worker only dials
 * out, the debug stream rides a leg it dials (raw bytes on `Upgrade: tcp`), and only the holder of the debug job's session may
 * attach. Real GDB in batch mode walks the debug program on sim pico, sim uno (avr-gdb) and a QEMU
 * board as it does locally (debug-gdb.test.ts, the same walk-through); the bad-input cases open the
 * debug stream as `hilbench debug --server` does.
 */
const ADMIN = 'admin-secret';
let app: BenchTestApp;
const workers: LabWorker[] = [];

afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
});

/** A lab server on the system clock (real GDB runs in real time) and one remote worker serving `board` (pico unless said). */
async function lab(backends: Partial<Record<'sim' | 'mock' | 'qemu', Backend>>, choice: BackendChoice, board = 'pico'): Promise<void> {
  app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, clock: systemClock });
  const { token } = await createWorkerToken(app.request, { adminToken: ADMIN, label: 'pi-debug' });
  workers.push(await startLabWorker({ serverUrl: app.url, token, clock: systemClock, boards: [board], backends, choice }));
}

const post = (token: string, path: string, body?: unknown) =>
  app.request(path, { method: 'POST', headers: { ...bearer(token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });

/** Opens a session on pico, arms it, submits the debug program in it; answers once the worker has the core halted. */
async function debugJob(token: string, options: { idleTimeoutSeconds?: number } = {}): Promise<{ jobId: string; sessionId: string }> {
  const opened = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico', idle_seconds: '120' }) });
  expect(opened.status, await opened.clone().text()).toBe(200);
  const { session_id: sessionId } = (await opened.json()) as { session_id: string };
  const armed = await post(token, `/api/v1/sessions/${sessionId}/debug`, options.idleTimeoutSeconds === undefined ? {} : { idle_timeout_seconds: options.idleTimeoutSeconds });
  expect(armed.status, await armed.clone().text()).toBe(200);
  const submitted = await flash(app, token, { board: 'pico', uart_seconds: '2', session: sessionId }, readFileSync(debugElf('pico')));
  expect(submitted.status, await submitted.clone().text()).toBe(200);
  const { job_id: jobId } = (await submitted.json()) as { job_id: string };
  await app.jobReaches(jobId, 'running', 'failed');
  return { jobId, sessionId };
}

/** Opens a debug stream (raw bytes on `Upgrade: tcp`) as `hilbench debug --server` does; what the target sends is gathered in `seen`, and why it closed is its final `E.` reply. */
async function openStream(token: string, jobId: string) {
  const stream = await new DebugStreamClient({ server: app.url, token }).open(jobId);
  let seen = '';
  let onSeen: () => void = () => undefined;
  let closedWith: (reason: string | undefined) => void = () => undefined;
  const closed = new Promise<string | undefined>((resolve) => (closedWith = resolve));
  stream.on('data', (bytes: Buffer) => {
    seen += bytes.toString('latin1');
    onSeen();
  });
  stream.once('close', () => {
    closedWith(finalErrorReply(seen));
    onSeen();
  });
  return {
    send: (text: string) => stream.write(Buffer.from(text, 'latin1')),
    close: () => stream.end(),
    closed,
    /** What the target sent once it matches `pattern` (the stream's closing ends the wait too; the test's own timeout bounds it). */
    until: (pattern: RegExp) =>
      new Promise<string>((resolve) => {
        onSeen = () => (pattern.test(seen) || closedNow ? resolve(seen) : undefined);
        let closedNow = false;
        void closed.then(() => (closedNow = true));
        onSeen();
      }),
  };
}

/** The sim backend; with `bridge`, its devices offer no `serve`, so the worker's main thread bridges the device's GDB stream (as for QEMU) and takes the legs itself. */
function simBackend(options: { bridge: boolean }): Backend {
  const sim = new SimBackend({ clock: systemClock });
  if (!options.bridge) return sim;
  return {
    name: 'sim',
    availability: (board) => sim.availability(board),
    open: async (board, openOptions) => {
      const device = await sim.open(board, openOptions);
      return Object.assign(device, { debug: { ...device.debug!, serve: undefined } });
    },
  };
}

/** The refusal of a debug stream's opening: its status and detail. */
async function refusalOf(token: string, jobId: string): Promise<{ status: number; detail: string }> {
  const err = await new DebugStreamClient({ server: app.url, token }).open(jobId).then(
    (stream) => (stream.destroy(), new Error('the stream opened')),
    (e: unknown) => e,
  );
  if (!(err instanceof DebugRefused)) throw err;
  return { status: err.status, detail: err.detail };
}

describe('hilbench debug through a server and a remote worker', () => {
  it.each([
    ['pico', 'sim', () => ({ sim: new SimBackend({ clock: systemClock }) })],
    ['uno', 'sim', () => ({ sim: new SimBackend({ clock: systemClock }) })],
    ['mps2-an385', 'qemu', () => ({ qemu: new QemuBackend({ clock: systemClock }) })],
  ] as const)('%s (%s) with real GDB: break at main, read $pc, a global and a stack word, step, detach; the firmware then prints', { timeout: 120_000 }, async (board, choice, backends) => {
    await lab(backends(), choice, board);
    const alice = await app.register('alice');
    const { gdb, outcome, uart } = await walkThroughSession(board, ({ listening, onUart }) =>
      runRemoteDebugSession({
        server: app.url,
        token: alice.token,
        board,
        firmware: readFileSync(debugElf(board)),
        gdbPort: 0,
        idleTimeoutSeconds: 120,
        afterDetachSeconds: 2,
        onUart,
        log: () => undefined,
        onListening: (port) => listening(port),
      }),
    );
    expect(walkThroughFacts(gdb), gdb).toEqual(allFactsHold);
    expect(outcome).toEqual({ outcome: 'passed', reason: expect.stringMatching(/^job job_\S+ is done: the debugger let the firmware go$/) });
    expect(uart).toBe(`hilbench debug board=${board} counter=42\r\n`);
  });

  it('the CLI with --server prints the target remote line, the UART on stdout, and exits 0 after the detach', { timeout: 120_000 }, async () => {
    await lab({ sim: new SimBackend({ clock: systemClock }) }, 'sim');
    const alice = await app.register('alice');
    const root = path.resolve(import.meta.dirname, '../..');
    const args = [hilbenchCli, 'debug', debugElf('pico'), '--board', 'pico', '--gdb-port', '0', '--server', app.url, '--token', alice.token];
    const child = execa('node', args, { cwd: root, reject: false });
    const port = await new Promise<number>((resolve, reject) => {
      let seen = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        const line = /target remote localhost:(\d+)/.exec(seen);
        if (line) resolve(Number(line[1]));
      });
      void child.then((r) => reject(new Error(`hilbench debug ended before listening (${r.exitCode}): ${r.stderr}`)));
    });
    const gdb = await gdbBatch('pico', port, ['break main', 'continue', 'print debug_counter', 'detach']);
    const result = await child;
    expect(gdb.output).toMatch(/^\$1 = 41$/m);
    expect({ exitCode: result.exitCode, stdout: result.stdout }, result.stderr).toEqual({ exitCode: 0, stdout: 'hilbench debug board=pico counter=42' });
    expect(result.stderr).toMatch(/hilbench debug: passed: job job_\S+ is done/);
  });

  it('refuses a second debugger, another agent, and a job that is not a debug job; a malformed packet closes only its stream', { timeout: 60_000 }, async () => {
    await lab({ sim: new SimBackend({ clock: systemClock }) }, 'sim');
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const { jobId, sessionId } = await debugJob(alice.token);

    const first = await openStream(alice.token, jobId);
    expect(await refusalOf(alice.token, jobId)).toEqual({ status: 409, detail: `job ${jobId} on board pico already has a debugger attached (one at a time)` });
    expect(await refusalOf(bob.token, jobId)).toEqual({ status: 404, detail: `job ${jobId} not found` });
    expect(await refusalOf('hb_nobody', jobId)).toEqual({ status: 401, detail: 'Invalid token: no agent has this token' });

    // The first stream works: a stop-reason query is answered by rp2040js's GDB server through the worker.
    first.send(rspPacket('?'));
    expect(await first.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    // A packet just under the 64 KiB bound (a 60 KB memory write) is answered through the server and the worker, and the stream goes on.
    first.send(rspPacket(`M20010000,${(30_000).toString(16)}:${'a5'.repeat(30_000)}`));
    expect(await first.until(/\$OK#/)).toMatch(/\$OK#/);

    // Bytes outside a packet: this stream closes with the reason; the job and the board go on.
    first.send('hello gdb');
    expect(await first.closed).toMatch(/^the debugger sent what is not GDB's remote protocol/);
    // An oversized packet closes its stream the same way.
    const next = await openStream(alice.token, jobId);
    next.send(`$${'m'.repeat(70 * 1024)}`);
    expect(await next.closed).toMatch(/^the debugger sent what is not GDB's remote protocol \(a packet longer than 65536 bytes/);
    // Another debugger attaches and finds the core halted.
    const third = await openStream(alice.token, jobId);
    third.send(rspPacket('?'));
    expect(await third.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    expect((await app.server.service.store.getJob(jobId))?.state).toBe('running');
    third.close();

    // The session's next job (its arming was used by the debug job) waits, and takes no debugger yet.
    const plain = await flash(app, alice.token, { board: 'pico', uart_seconds: '1', session: sessionId }, readFileSync(debugElf('pico')));
    const { job_id: plainId } = (await plain.json()) as { job_id: string };
    expect(await refusalOf(alice.token, plainId)).toEqual({ status: 409, detail: `job ${plainId} is queued: a debugger attaches once it is running (GET /api/v1/jobs/${plainId}?wait=...)` });
    // A plain GET of the stream's path, and a WebSocket upgrade, are told it is `Upgrade: tcp`.
    const plainGet = await app.request(`/api/v1/jobs/${jobId}/debug`, { headers: bearer(alice.token) });
    expect([plainGet.status, plainGet.headers.get('upgrade')]).toEqual([426, 'tcp']);
    expect(await rawUpgrade(app.url, `/api/v1/jobs/${jobId}/debug`, 'websocket')).toMatch(/^HTTP\/1\.1 426 [^]*\r\nupgrade: tcp\r\n/);
  });

  it.each([
    ["the engine's thread", false],
    ["the worker's bridge", true],
  ])('a debugger that ends its side right after a packet (a half-close) still reads the answer, through the server and a leg of %s', { timeout: 60_000 }, async (_where, bridge) => {
    await lab({ sim: simBackend({ bridge }) }, 'sim');
    const alice = await app.register('alice');
    const { jobId } = await debugJob(alice.token);
    const stream = await openStream(alice.token, jobId);
    stream.send(rspPacket('?'));
    stream.close();
    expect(await stream.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    await stream.closed;
  });

  it("a GDB that ends its side right after a packet still reads the answer through hilbench debug --server's port", { timeout: 60_000 }, async () => {
    await lab({ sim: simBackend({ bridge: true }) }, 'sim');
    const alice = await app.register('alice');
    let listening: (port: number) => void = () => undefined;
    const port = new Promise<number>((resolve) => (listening = resolve));
    const outcome = runRemoteDebugSession({ server: app.url, token: alice.token, board: 'pico', firmware: readFileSync(debugElf('pico')), gdbPort: 0, idleTimeoutSeconds: 120, afterDetachSeconds: 1, onUart: () => undefined, log: () => undefined, onListening: (p) => listening(p) });
    const gdb = net.createConnection({ port: await port, host: '127.0.0.1', allowHalfOpen: true });
    let seen = '';
    gdb.on('data', (bytes: Buffer) => (seen += bytes.toString('latin1')));
    // It ends its own side after its last packet, and closes once the other side ended too.
    gdb.once('end', () => gdb.end());
    await new Promise((resolve) => gdb.once('connect', resolve));
    gdb.end(rspPacket('?'));
    await new Promise((resolve) => gdb.once('close', resolve));
    expect(seen).toMatch(/\$T05thread:1;#/);
    const next = net.createConnection({ port: await port, host: '127.0.0.1' });
    next.write(rspPacket('D'));
    expect(await outcome).toMatchObject({ outcome: 'passed' });
    next.destroy();
  });

  it('a debugger that vanishes frees the board after the idle timeout; the finished job then refuses a debugger', { timeout: 60_000 }, async () => {
    await lab({ sim: new SimBackend({ clock: systemClock }) }, 'sim');
    const alice = await app.register('alice');
    const { jobId } = await debugJob(alice.token, { idleTimeoutSeconds: 1 });
    // The GDB connection drops without a detach: the client closes its stream.
    const stream = await openStream(alice.token, jobId);
    stream.close();
    await stream.closed;
    await app.jobReaches(jobId, 'failed');
    const job = await app.server.service.store.getJob(jobId);
    expect(job?.failure).toEqual({ kind: 'timeout', message: 'no debugger connected for 1 s: the board is freed' });
    expect(await refusalOf(alice.token, jobId)).toEqual({ status: 409, detail: `job ${jobId} has failed (timeout: no debugger connected for 1 s: the board is freed): a debugger attaches only while its debug job runs` });
  });

  it("refuses a worker's debug leg for a job that is not its running debug job, and a leg without a worker token", { timeout: 60_000 }, async () => {
    await lab({ sim: new SimBackend({ clock: systemClock }) }, 'sim');
    const alice = await app.register('alice');
    const { jobId } = await debugJob(alice.token);
    const { token: otherToken } = await createWorkerToken(app.request, { adminToken: ADMIN, label: 'pi-other' });
    const signal = new AbortController().signal;
    const notItsJob = await dialDebugLeg({ serverUrl: app.url, token: otherToken, jobId, clock: systemClock, signal }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(notItsJob).toBeInstanceOf(DebugLegRefused);
    expect((notItsJob as Error).message).toMatch(new RegExp(`404 no running debug job ${jobId} of this worker is served here`));
    const agentToken = await dialDebugLeg({ serverUrl: app.url, token: alice.token, jobId, clock: systemClock, signal }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(agentToken).not.toBeInstanceOf(DebugLegRefused);
    expect((agentToken as Error).message).toMatch(/refused the debug leg .*: 401 /);
  });

  it("the worker in the server's process carries the streams too, its legs an in-process pair", { timeout: 60_000 }, async () => {
    app = await startBenchTestApp({ clock: systemClock, backend: 'sim', backends: { sim: new SimBackend({ clock: systemClock }) } });
    const alice = await app.register('alice');
    const { jobId } = await debugJob(alice.token);
    const first = await openStream(alice.token, jobId);
    first.send(rspPacket('?'));
    expect(await first.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    first.send('hello gdb');
    expect(await first.closed).toMatch(/^the debugger sent what is not GDB's remote protocol/);
    const next = await openStream(alice.token, jobId);
    next.send(rspPacket('?'));
    expect(await next.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    // A kill ends the job as it does locally: done.
    next.send(`+${rspPacket('k')}`);
    await app.jobReaches(jobId, 'done', 'failed');
    expect((await app.server.service.store.getJob(jobId))?.state).toBe('done');
  });

  it('ending the session ends an open stream at once, its last bytes an E. reply saying so, and refuses the next debugger', { timeout: 60_000 }, async () => {
    await lab({ sim: new SimBackend({ clock: systemClock }) }, 'sim');
    const alice = await app.register('alice');
    const { jobId, sessionId } = await debugJob(alice.token);
    const stream = await openStream(alice.token, jobId);
    stream.send(rspPacket('?'));
    expect(await stream.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    expect((await post(alice.token, `/api/v1/sessions/${sessionId}/end`)).status).toBe(200);
    // Not when the worker reports the job's end: the session's end ends the stream, with why.
    const closedWith = await stream.closed;
    // Once its worker has ended the job (cancelled, with the session's end as the reason), the next
    // debugger is told exactly that; the stream's last reply said the same reason.
    await app.jobReaches(jobId, 'failed');
    const failure = (await app.server.service.store.getJob(jobId))?.failure;
    expect(failure).toEqual({ kind: 'cancelled', message: expect.stringMatching(new RegExp(`^session ${sessionId} ended at \\S+$`)) });
    expect(closedWith).toBe(`job ${jobId} is stopping: ${failure!.message}`);
    expect(await refusalOf(alice.token, jobId)).toEqual({ status: 409, detail: `job ${jobId} has failed (cancelled: ${failure!.message}): a debugger attaches only while its debug job runs` });
  });

  it('cancelling the job ends an open stream at once, its last bytes an E. reply with the cancel\'s reason', { timeout: 60_000 }, async () => {
    await lab({ sim: new SimBackend({ clock: systemClock }) }, 'sim');
    const alice = await app.register('alice');
    const { jobId } = await debugJob(alice.token);
    const stream = await openStream(alice.token, jobId);
    stream.send(rspPacket('?'));
    expect(await stream.until(/\$[ST][0-9a-f]{2}/)).toMatch(/\$[ST]05/);
    const cancelled = app.request(`/api/v1/jobs/${jobId}/cancel`, { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ reason: 'seen enough' }) });
    expect(await stream.closed).toBe(`job ${jobId} is stopping: its agent cancelled it: seen enough`);
    expect((await cancelled).status).toBe(200);
  });

  it('a board on the mock backend is refused with the reason', { timeout: 60_000 }, async () => {
    await lab({ mock: new MockBackend() }, 'mock');
    const alice = await app.register('alice');
    const { jobId } = await debugJob(alice.token);
    await app.jobReaches(jobId, 'failed');
    const refused = await refusalOf(alice.token, jobId);
    expect(refused.status).toBe(409);
    expect(refused.detail).toMatch(new RegExp(`^job ${jobId} has failed \\(unavailable: board pico .*mock.*\\): a debugger attaches only while its debug job runs$`));
  });

  it('a debug upgrade whose path is not valid percent-encoding is answered 404, before any token, and the server goes on', { timeout: 60_000 }, async () => {
    await lab({ mock: new MockBackend() }, 'mock');
    for (const path of ['/api/v1/jobs/%E0/debug', '/api/v1/worker/jobs/%E0%A4/debug']) {
      const answer = await rawUpgrade(app.url, path);
      // A URIError thrown in the upgrade listener once ended the whole process.
      expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    }
    expect((await app.request('/api/v1/health')).status).toBe(200);
  });
});

/** Sends an upgrade request (`Upgrade: tcp` unless said) for `path` with no token and answers what the server wrote. */
async function rawUpgrade(baseUrl: string, path: string, protocol = 'tcp'): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: Upgrade\r\nUpgrade: ${protocol}\r\n\r\n`);
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  await new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  return text;
}
