import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { finalErrorReply } from '../../bin/debug-on-server.js';
import { DebugRefused, DebugStreamClient } from '../../bin/debug-stream-client.js';
import { FORWARD_ANSWER_MS, forwardUpgrade } from '../../server/bench/routes/debug-forward.js';
import { DEBUG_LEG_HOLD_MS } from '../../wire/worker/debug-schemas.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { debugElf } from '../support/gdb-batch.js';
import { createWorkerToken, startLabWorker } from '../support/lab-worker.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer, flash } from './bench-job-requests.js';

/**
 * Debugging behind two replicas of one PostgreSQL database (issue 32, decisions 0663 and 0910):
 * the arming is in the store, so whichever replica hands the job to its worker hands it as a debug
 * job; that replica holds its streams, and the other forwards the debugger's upgrade (and the
 * worker's legs) to it, at the address it names (`replicaUrl`). Without one, the other refuses with 503.
 */
const ADMIN = 'replica-admin';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A replica of `databaseUrl` that names its own address to the others (unless `named: false`). */
async function replica(databaseUrl: string, options: { named: boolean }): Promise<BenchTestApp> {
  let self: string | null = null;
  const app = await startBenchTestApp({ databaseUrl, localWorker: false, adminToken: ADMIN, clock: systemClock, ...(options.named ? { replicaUrl: () => self } : {}) });
  self = app.url;
  cleanups.push(() => app.close());
  return app;
}

/**
 * Replicas a and b on one database, the system clock (the sim runs in real time), and pico's
 * worker dialling `workerUrl(a, b)` (default b). `bNamed: false`: b has no `replicaUrl`.
 */
async function twoReplicas(options: { bNamed?: boolean; workerUrl?: (a: BenchTestApp, b: BenchTestApp) => Promise<string> } = {}): Promise<{ a: BenchTestApp; b: BenchTestApp }> {
  const database = await createTestDatabase({ migrated: 'bench' });
  cleanups.push(database.drop);
  const a = await replica(database.url, { named: true });
  const b = await replica(database.url, { named: options.bNamed ?? true });
  const { token } = await createWorkerToken(b.request, { adminToken: ADMIN, label: 'pi-debug' });
  const serverUrl = options.workerUrl ? await options.workerUrl(a, b) : b.url;
  const worker = await startLabWorker({ serverUrl, token, clock: systemClock, boards: ['pico'], backends: { sim: new SimBackend({ clock: systemClock }) }, choice: 'sim' });
  cleanups.push(worker.close);
  // Replica a learns of the worker's boards once its availability cache (5 s) runs out.
  let seen = '';
  await waitUntil(
    systemClock,
    async () => {
      const { boards } = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string }> };
      seen = boards.find((board) => board.id === 'pico')?.status ?? 'missing';
      return seen === 'free' ? true : undefined;
    },
    { timeoutMs: 30_000, pollMs: 250, describe: 'replica a to see pico served', lastSeen: () => seen },
  );
  return { a, b };
}

/** On `arming`: a session on pico, armed, and `elf` submitted in it (`uartSeconds` of device time after a detach). */
async function armedJob(arming: BenchTestApp, token: string, elf: string, uartSeconds: string): Promise<string> {
  const opened = await arming.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico', idle_seconds: '120' }) });
  expect(opened.status, await opened.clone().text()).toBe(200);
  const { session_id: sessionId } = (await opened.json()) as { session_id: string };
  const armed = await arming.request(`/api/v1/sessions/${sessionId}/debug`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{}' });
  expect(armed.status, await armed.clone().text()).toBe(200);
  const submitted = await flash(arming, token, { board: 'pico', uart_seconds: uartSeconds, session: sessionId }, readFileSync(elf));
  expect(submitted.status, await submitted.clone().text()).toBe(200);
  return ((await submitted.json()) as { job_id: string }).job_id;
}

/**
 * A load balancer that sends the worker's debug legs to `a` and everything else to `b`, as one
 * that spreads connections may: the worker claims through b and dials its legs through a (which
 * holds each as long as b's hold, and a bit).
 */
async function splittingBalancer(a: BenchTestApp, b: BenchTestApp): Promise<string> {
  const front = http.createServer((req, res) => {
    const out = http.request(new URL(req.url ?? '/', b.url), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  front.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const to = /^\/api\/v1\/worker\/jobs\/[^/]+\/debug/.test(req.url ?? '') ? a : b;
    forwardUpgrade(req, socket, head, { replicaUrl: to.url, clock: systemClock, answerMs: DEBUG_LEG_HOLD_MS + FORWARD_ANSWER_MS }).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    front.closeAllConnections();
    await new Promise((resolve) => front.close(resolve));
  });
  return `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
}

/**
 * Through `via`: a debug stream on `jobId` that reads the halted target's stop reply, then kills
 * it; the job is then `done` on both replicas. Meanwhile a second debugger, through `other`, is
 * refused with `secondRefused` (default: as the replica holding the stream refuses it).
 */
async function debugAndKill(via: BenchTestApp, other: BenchTestApp, token: string, jobId: string, secondRefused: [number, RegExp] = [409, /already has a debugger attached \(one at a time\)$/]): Promise<void> {
  const stream = await new DebugStreamClient({ server: via.url, token }).open(jobId);
  let seen = '';
  const stopReply = new Promise<string>((resolve) =>
    stream.on('data', (bytes: Buffer) => {
      seen += bytes.toString('latin1');
      if (/\$[ST][0-9a-f]{2}/.test(seen)) resolve(seen);
    }),
  );
  stream.write(Buffer.from(rspPacket('?'), 'latin1'));
  expect(await stopReply).toMatch(/\$[ST]05/);
  const second = await new DebugStreamClient({ server: other.url, token }).open(jobId).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(second).toBeInstanceOf(DebugRefused);
  expect([(second as DebugRefused).status, (second as DebugRefused).detail]).toEqual([secondRefused[0], expect.stringMatching(secondRefused[1])]);
  // Killing the target ends the job as a kill does locally: done.
  stream.write(Buffer.from(`+${rspPacket('k')}`, 'latin1'));
  await via.jobReaches(jobId, 'done', 'failed');
  expect((await other.server.service.store.getJob(jobId))?.state).toBe('done');
}

describe('debugging behind two replicas of one database', () => {
  it('works through the replica the board’s worker connects to, another replica beside it', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas();
    const alice = await a.register('alice');
    const jobId = await armedJob(b, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    expect((await a.server.service.store.getJob(jobId))?.state).toBe('running');
    await debugAndKill(b, a, alice.token, jobId);
  });

  it('armed and debugged through the other replica: the job is a debug job, and its stream is forwarded to the replica holding it', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas();
    const alice = await a.register('alice');
    const jobId = await armedJob(a, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    await debugAndKill(a, b, alice.token, jobId);
    // The debug job is forgotten in the store once it ended: by replica b, which recorded the end
    // just before; a hears of a session job's end at once now (decision 0801), maybe before b forgot it.
    await waitUntil(systemClock, async () => ((await a.server.service.store.debugArmings.job(jobId)) === undefined ? true : undefined), {
      timeoutMs: 10_000,
      pollMs: 50,
      describe: 'the debug job forgotten in the store once it ended',
    });
  });

  it('a session ended through the other replica ends the stream held here with the E. reply, at the worker’s next claim renewal here', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas();
    const alice = await a.register('alice');
    const jobId = await armedJob(b, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    const sessionId = (await b.server.service.store.getJob(jobId))!.sessionId!;
    const stream = await new DebugStreamClient({ server: b.url, token: alice.token }).open(jobId);
    let seen = '';
    const answered = new Promise<void>((resolve) =>
      stream.on('data', (bytes: Buffer) => {
        seen += bytes.toString('latin1');
        if (/\$[ST]05/.test(seen)) resolve();
      }),
    );
    const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
    stream.write(Buffer.from(rspPacket('?'), 'latin1'));
    await answered;
    expect((await a.request(`/api/v1/sessions/${sessionId}/end`, { method: 'POST', headers: bearer(alice.token) })).status).toBe(200);
    await closed;
    // No signal of a stop reaches b from a: b hears it when the worker, told on renewing its claim, renews it there (every 2 s).
    expect(finalErrorReply(seen)).toMatch(new RegExp(`^job ${jobId} is stopping: session ${sessionId} ended at \\S+$`));
  });

  it('a replica closing ends the debug streams it forwards, so its shutdown does not wait for them', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas();
    const alice = await a.register('alice');
    const jobId = await armedJob(a, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    const stream = await new DebugStreamClient({ server: a.url, token: alice.token }).open(jobId);
    const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
    let stopReply = '';
    const halted = new Promise<void>((resolve) =>
      stream.on('data', (bytes: Buffer) => {
        stopReply += bytes.toString('latin1');
        if (/\$[ST][0-9a-f]{2}/.test(stopReply)) resolve();
      }),
    );
    stream.write(Buffer.from(rspPacket('?'), 'latin1'));
    await halted;
    // The forwarded pair is no connection a's HTTP server ends: before, a's close waited for it (the job's whole hour).
    let shutDown = false;
    await Promise.race([
      a.close().then(() => (shutDown = true)),
      new Promise((resolve) => systemClock.setTimeout(() => resolve(undefined), 30_000)),
    ]);
    expect(shutDown, "replica a's close still waits after 30 s: the stream it forwards keeps its server open").toBe(true);
    await closed;
  });

  it('a worker whose legs a load balancer sends to the other replica still carries the stream', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas({ workerUrl: splittingBalancer });
    const alice = await a.register('alice');
    const jobId = await armedJob(a, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    expect((await b.server.service.store.debugArmings.job(jobId))?.replicaUrl).toBe(b.url);
    await debugAndKill(a, b, alice.token, jobId);
  });

  it('when the replica holding the streams names no address, the other refuses them with 503 saying so; the job is still a debug job', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas({ bNamed: false });
    const alice = await a.register('alice');
    const jobId = await armedJob(a, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    const refused = await new DebugStreamClient({ server: a.url, token: alice.token }).open(jobId).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(DebugRefused);
    expect((refused as DebugRefused).status).toBe(503);
    expect((refused as DebugRefused).detail).toMatch(/debug streams are served by the replica that handed it to its worker, and that replica has no --replica-url .*"Debugging behind replicas"/);
    // Never an ordinary run: through b the halted target answers.
    await debugAndKill(b, a, alice.token, jobId, [503, /has no --replica-url/]);
  });
});
