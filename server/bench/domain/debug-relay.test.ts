import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { BenchError } from './bench-errors.js';
import { DebugRelay, type DebuggerPeer, MAX_PENDING_DEBUG_BYTES, SESSION_RENEW_MS, type WorkerPeer } from './debug-relay.js';

/** The relay on a fake clock, with a debug job of agent a1 claimed by worker w1 (the store is asked only about jobs the relay does not know). */
async function relayWithJob() {
  const fake = createClock(0);
  const job = { jobId: 'job_1', agentId: 'a1', board: 'pico', sessionId: 's1', state: 'running' } as JobRecord;
  const real = new SqliteBenchStore(':memory:');
  // An arming needs the agent's active session in the store (decision 0810).
  await real.insertAgent({ agentId: 'a1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: 0 });
  await real.openSession({ sessionId: 's1', agentId: 'a1', board: 'pico', state: 'active', idleSeconds: 90, createdAtMs: 0, expiresAtMs: 90_000, endedAtMs: null, lastHeartbeatAtMs: null });
  const { debugArmings } = real;
  const store = { getJob: async (id: string) => (id === job.jobId ? job : undefined), debugArmings } as unknown as BenchStore;
  const relay = new DebugRelay({ clock: clockFromFakeTimers(fake), store, replicaUrl: () => null });
  await relay.arm('a1', 's1', { idleTimeoutMs: 1_000 });
  const terms = await relay.claimed(job, 'w1');
  return { fake, relay, terms };
}

/** A worker's end that writes down what it was told. */
function workerPeer(): WorkerPeer & { told: string[] } {
  const told: string[] = [];
  return {
    told,
    open: (stream) => void told.push(`open ${stream}`),
    data: (stream, bytes) => void told.push(`data ${stream} ${bytes.toString('latin1')}`),
    close: (stream, reason) => void told.push(`close ${stream}: ${reason}`),
    ended: (reason) => void told.push(`ended: ${reason}`),
    replaced: () => void told.push('replaced'),
    bufferedBytes: 0,
  };
}

/** A debugger's end that writes down what it got. */
function debuggerPeer(options: { bufferedBytes?: number } = {}): DebuggerPeer & { got: string[] } {
  const got: string[] = [];
  return {
    got,
    data: (bytes) => void got.push(bytes.toString('latin1')),
    closed: (reason, { protocol }) => void got.push(`closed${protocol ? ' (protocol)' : ''}: ${reason}`),
    bufferedBytes: options.bufferedBytes ?? 0,
  };
}

const bytes = (text: string) => Buffer.from(text, 'latin1');

describe('the debug relay', () => {
  it('hands the armed session’s next job out with its terms, once', async () => {
    const { relay, terms } = await relayWithJob();
    expect(terms).toEqual({ idleTimeoutMs: 1_000, maxDebugMs: 3_600_000 });
    expect(await relay.claimed({ jobId: 'job_2', agentId: 'a1', board: 'pico', sessionId: 's1' } as JobRecord, 'w1')).toBeUndefined();
  });

  it('splices a debugger and the worker both ways, and refuses a second debugger while one is attached', async () => {
    const { relay } = await relayWithJob();
    const worker = workerPeer();
    const channel = relay.connectWorker('w1', 'job_1', worker)!;
    const opened = await relay.open('a1', 'job_1');
    const gdb = debuggerPeer();
    opened.attach(gdb);
    opened.send(bytes('$g#67'));
    channel.data(opened.stream, bytes('+$00#00'));
    expect(worker.told).toEqual([`open ${opened.stream}`, `data ${opened.stream} $g#67`]);
    expect(gdb.got).toEqual(['+$00#00']);
    await expect(relay.open('a1', 'job_1')).rejects.toEqual(new BenchError('debugger_attached', 'job job_1 on board pico already has a debugger attached (one at a time)'));
    // Another worker cannot take the job's channel.
    expect(relay.holds('w2', 'job_1')).toBe(false);
    expect(relay.connectWorker('w2', 'job_1', workerPeer())).toBeUndefined();
  });

  it('keeps what comes before the worker connects (one data message per run), and drops what the worker never saw of a replaced stream', async () => {
    const { relay } = await relayWithJob();
    const first = await relay.open('a1', 'job_1');
    first.attach(debuggerPeer());
    first.send(bytes('+'));
    first.send(bytes('$g#67'));
    first.close('the debugger closed the stream');
    const second = await relay.open('a1', 'job_1');
    second.attach(debuggerPeer());
    second.send(bytes('$?#3f'));
    const worker = workerPeer();
    relay.connectWorker('w1', 'job_1', worker);
    expect(worker.told).toEqual([`open ${second.stream}`, `data ${second.stream} $?#3f`]);
  });

  it('closes only the stream whose debugger sent what is not RSP, saying why', async () => {
    const { relay } = await relayWithJob();
    const worker = workerPeer();
    relay.connectWorker('w1', 'job_1', worker);
    const opened = await relay.open('a1', 'job_1');
    const gdb = debuggerPeer();
    opened.attach(gdb);
    opened.send(bytes('hello gdb'));
    expect(gdb.got).toEqual([expect.stringMatching(/^closed \(protocol\): the debugger sent what is not GDB's remote protocol/)]);
    expect(worker.told.at(-1)).toMatch(new RegExp(`^close ${opened.stream}: the debugger sent what is not GDB's remote protocol`));
    // The board waits for another debugger.
    const next = await relay.open('a1', 'job_1');
    expect(next.stream).toBe(opened.stream + 1);
  });

  it('closes a stream whose debugger does not take the target’s bytes (over the bound)', async () => {
    const { relay } = await relayWithJob();
    const channel = relay.connectWorker('w1', 'job_1', workerPeer())!;
    const opened = await relay.open('a1', 'job_1');
    const gdb = debuggerPeer({ bufferedBytes: MAX_PENDING_DEBUG_BYTES + 1 });
    opened.attach(gdb);
    channel.data(opened.stream, bytes('$00#00'));
    expect(gdb.got).toEqual([`closed: more than ${MAX_PENDING_DEBUG_BYTES} bytes wait for the debugger's client: this stream is closed`]);
  });

  it('closes the stream when the worker’s connection drops, and the worker’s reconnection carries the next one', async () => {
    const { relay } = await relayWithJob();
    const channel = relay.connectWorker('w1', 'job_1', workerPeer())!;
    const opened = await relay.open('a1', 'job_1');
    const gdb = debuggerPeer();
    opened.attach(gdb);
    channel.disconnected();
    expect(gdb.got).toEqual(["closed: the worker's connection to the server dropped; the board waits for another debugger"]);
    const worker = workerPeer();
    relay.connectWorker('w1', 'job_1', worker);
    const next = await relay.open('a1', 'job_1');
    expect(worker.told).toEqual([`open ${next.stream}`]);
  });

  it('renews the session at most every SESSION_RENEW_MS while the debugger is heard from', async () => {
    const { fake, relay } = await relayWithJob();
    const opened = await relay.open('a1', 'job_1');
    expect(opened.heard()).toBeNull();
    fake.tick(SESSION_RENEW_MS);
    expect(opened.heard()).toBe('s1');
    expect(opened.heard()).toBeNull();
  });

  it('closes the stream and the worker’s channel when the job ends; the finished job then refuses a debugger', async () => {
    const { relay } = await relayWithJob();
    const worker = workerPeer();
    relay.connectWorker('w1', 'job_1', worker);
    const opened = await relay.open('a1', 'job_1');
    const gdb = debuggerPeer();
    opened.attach(gdb);
    relay.jobEnded('job_1', 'job job_1 is done');
    expect(gdb.got).toEqual(['closed: job job_1 is done']);
    expect(worker.told.at(-1)).toBe('ended: job job_1 is done');
    expect(relay.has('job_1')).toBe(false);
    await expect(relay.open('a1', 'job_1')).rejects.toMatchObject({ code: 'job_not_debuggable' });
  });
});
