import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { DEBUG_LEG_HOLD_MS } from '../../../wire/worker/debug-schemas.js';
import type { AgentRecord, BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import type { WorkerRecord } from '../../storage/bench/worker-registry.js';
import { BenchError } from '../domain/bench-errors.js';
import { DEBUGGER_WAIT_MS, DebugRelay, SESSION_RENEW_MS } from '../domain/debug-relay.js';
import type { Bench } from '../domain/bench.js';
import { debugRoutes } from './debug-routes.js';
import { debugUpgrades } from './debug-upgrades.js';
import { SPLICE_LINGER_MS } from './debug-splice.js';

/** The worker's leg as /openapi.json names it. */
const WORKER_PATH_TEMPLATE = '/api/v1/worker/jobs/{job_id}/debug';

let server: Server | undefined;
let closeUpgrades: () => void = () => undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  closeUpgrades();
  for (const socket of sockets.splice(0)) socket.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/**
 * The debug upgrades on a loopback server and a fake clock, with debug job job_1 of agent a1
 * (token `hb_a1`) handed to worker w1 (token `hbw_w1`; `hbw_w2` is another worker).
 */
async function debugServer() {
  const fake = createClock(0);
  const clock = clockFromFakeTimers(fake);
  const job = { jobId: 'job_1', agentId: 'a1', board: 'pico', sessionId: 's1', state: 'running' } as JobRecord;
  const real = new SqliteBenchStore(':memory:');
  await real.insertAgent({ agentId: 'a1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: 0 });
  await real.openSession({ sessionId: 's1', agentId: 'a1', board: 'pico', state: 'active', idleSeconds: 90, createdAtMs: 0, expiresAtMs: 90_000, endedAtMs: null, lastHeartbeatAtMs: null });
  const store = { getJob: async (id: string) => (id === job.jobId ? job : undefined), debugArmings: real.debugArmings } as unknown as BenchStore;
  const relay = new DebugRelay({ clock, store, replicaUrl: () => null });
  await relay.arm('a1', 's1', { idleTimeoutMs: 60_000 });
  await relay.claimed(job, 'w1');
  const renewed: string[] = [];
  const bearer = (header: string | undefined, prefix: string) => {
    const token = /^Bearer (\S+)$/.exec(header ?? '')?.[1];
    if (!token?.startsWith(prefix)) throw new BenchError('invalid_token', 'Invalid token: no agent has this token');
    return token.slice(prefix.length);
  };
  const upgrades = debugUpgrades({
    relay,
    clock,
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    authenticateAgent: async (header) => ({ agentId: bearer(header, 'hb_') }) as AgentRecord,
    authenticateWorker: async (header) => ({ workerId: bearer(header, 'hbw_') }) as WorkerRecord,
    renewSession: async (_agent, sessionId) => void renewed.push(sessionId),
  });
  closeUpgrades = upgrades.close;
  server = createServer((_req, res) => res.end());
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => (upgrades.takes(req) ? upgrades.upgrade(req, socket, head) : socket.destroy()));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return { fake, relay, renewed, port };
}

/** A raw upgrade request on `path` with `token`: the connection, and what it has read so far. `halfOpen`: it stays open after the server's end. */
function upgradeRequest(port: number, path: string, token: string, options: { halfOpen?: boolean } = {}) {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: options.halfOpen ?? false });
  sockets.push(socket);
  socket.on('error', () => undefined);
  let text = '';
  const waiters: Array<() => void> = [];
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    for (const waiter of waiters.splice(0)) waiter();
  });
  socket.on('close', () => {
    for (const waiter of waiters.splice(0)) waiter();
  });
  socket.write(`GET ${path} HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  return {
    socket,
    /** What was read once it matches `pattern` (or the connection closed). */
    until: (pattern: RegExp) =>
      new Promise<string>((resolve) => {
        const check = () => (pattern.test(text) || socket.destroyed ? resolve(text) : void waiters.push(check));
        check();
      }),
  };
}

const WORKER_PATH = '/api/v1/worker/jobs/job_1/debug';
const AGENT_PATH = '/api/v1/jobs/job_1/debug';

describe('debugUpgrades: Upgrade: tcp legs paired and spliced', () => {
  it("pairs the worker's held leg with the debugger: both get 101, the bytes flow both ways, and the session is renewed while it is attached", async () => {
    const { fake, port, renewed } = await debugServer();
    const worker = upgradeRequest(port, WORKER_PATH, 'hbw_w1');
    // Held: nothing is answered until a debugger comes.
    const gdb = upgradeRequest(port, AGENT_PATH, 'hb_a1');
    expect(await worker.until(/\r\n\r\n/)).toBe('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: tcp\r\n\r\n');
    expect(await gdb.until(/\r\n\r\n/)).toBe('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: tcp\r\n\r\n');
    gdb.socket.write('+$g#67');
    expect(await worker.until(/\$g#67$/)).toMatch(/\r\n\r\n\+\$g#67$/);
    worker.socket.write('+$00#00');
    expect(await gdb.until(/\$00#00$/)).toMatch(/\r\n\r\n\+\$00#00$/);
    // Silent or not, an attached debugger keeps its session: renewed every SESSION_RENEW_MS.
    fake.tick(SESSION_RENEW_MS * 2);
    expect(renewed).toEqual(['s1', 's1']);
    // The debugger goes: the worker's leg ends too.
    gdb.socket.end();
    await once(worker.socket, 'close');
  });

  it(`answers a held leg 204 after DEBUG_LEG_HOLD_MS on the injected clock, and a leg for another worker's job 404`, async () => {
    const { fake, port } = await debugServer();
    const held = upgradeRequest(port, WORKER_PATH, 'hbw_w1');
    await new Promise<void>((resolve) => server!.once('upgrade', () => setImmediate(resolve)));
    fake.tick(DEBUG_LEG_HOLD_MS);
    expect(await held.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 204 No Content\r\nx-hilbench-dial-again: no debugger came within 30 s\r\n/);
    const other = upgradeRequest(port, WORKER_PATH, 'hbw_w2');
    expect(await other.until(/\}$/)).toMatch(/^HTTP\/1\.1 404 [^]*\{"detail":"no running debug job job_1 of this worker is served here/);
    // Both answers are in the route's documentation (/openapi.json, and the interface table checked against it).
    const route = debugRoutes({} as Bench, {} as DebugRelay).find((r) => r.path === WORKER_PATH_TEMPLATE)!;
    expect(Object.keys({ ...route.otherSuccess, ...route.errors })).toEqual(expect.arrayContaining(['204', '404']));
  });

  it('refuses a debugger with 503 when no leg comes within DEBUGGER_WAIT_MS, and frees its place', async () => {
    const { fake, port } = await debugServer();
    const gdb = upgradeRequest(port, AGENT_PATH, 'hb_a1');
    await new Promise<void>((resolve) => server!.once('upgrade', () => setImmediate(resolve)));
    fake.tick(DEBUGGER_WAIT_MS);
    expect(await gdb.until(/\}$/)).toMatch(/^HTTP\/1\.1 503 [^]*retry-after: 1\r\n[^]*did not take the debugger within 10 s/i);
    const worker = upgradeRequest(port, WORKER_PATH, 'hbw_w1');
    const next = upgradeRequest(port, AGENT_PATH, 'hb_a1');
    expect(await next.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101 /);
    expect(await worker.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101 /);
  });

  it("ends a spliced stream when the job ends, the debugger reading why as an E. reply; a held leg is told 404", async () => {
    const { relay, port } = await debugServer();
    const worker = upgradeRequest(port, WORKER_PATH, 'hbw_w1');
    const gdb = upgradeRequest(port, AGENT_PATH, 'hb_a1');
    await gdb.until(/\r\n\r\n/);
    await worker.until(/\r\n\r\n/);
    const nextLeg = upgradeRequest(port, WORKER_PATH, 'hbw_w1');
    await new Promise<void>((resolve) => server!.once('upgrade', () => setImmediate(resolve)));
    relay.jobEnded('job_1', 'job job_1 is done');
    expect(await gdb.until(/#[0-9a-f]{2}$/)).toMatch(/\r\n\r\n\+\$E\.job job_1 is done#[0-9a-f]{2}$/);
    expect(await nextLeg.until(/\}$/)).toMatch(/^HTTP\/1\.1 404 /);
    await once(worker.socket, 'close');
  });

  it('frees the place of a debugger that leaves by FIN while its worker leg stays open, SPLICE_LINGER_MS later', async () => {
    const { fake, port } = await debugServer();
    const worker = upgradeRequest(port, WORKER_PATH, 'hbw_w1', { halfOpen: true });
    const gdb = upgradeRequest(port, AGENT_PATH, 'hb_a1');
    await gdb.until(/\r\n\r\n/);
    await worker.until(/\r\n\r\n/);
    // The debugger half-closes; its end reaches the worker, which keeps its side open.
    gdb.socket.end();
    await once(worker.socket, 'end');
    const gdbClosed = once(gdb.socket, 'close');
    // The linger cuts the worker's leg; the debugger's stream then ends, and its place is free.
    fake.tick(SPLICE_LINGER_MS);
    await gdbClosed;
    const nextLeg = upgradeRequest(port, WORKER_PATH, 'hbw_w1');
    const next = upgradeRequest(port, AGENT_PATH, 'hb_a1');
    expect(await next.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101 /);
    expect(await nextLeg.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101 /);
  });

  it('takes an absolute-form request target (GET http://host/api/v1/jobs/{id}/debug) as its origin form', async () => {
    const { port } = await debugServer();
    const worker = upgradeRequest(port, `http://h${WORKER_PATH}`, 'hbw_w1');
    const gdb = upgradeRequest(port, `http://h:80${AGENT_PATH}`, 'hb_a1');
    expect(await gdb.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101 /);
    expect(await worker.until(/\r\n\r\n/)).toMatch(/^HTTP\/1\.1 101 /);
  });
});
