import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import type { BenchStore, JobRecord } from '../store/bench-store.js';
import { BenchError } from './bench-errors.js';
import { DebugRelay, STREAM_SILENCE_MS } from './debug-relay.js';

/** The relay on a fake clock, with a debug job of agent a1 claimed by worker w1 (the store is asked only about jobs the relay does not know). */
function relayWithJob() {
  const fake = createClock(0);
  const job = { jobId: 'job_1', agentId: 'a1', board: 'pico', sessionId: 's1', state: 'running' } as JobRecord;
  const store = { getJob: async (id: string) => (id === job.jobId ? job : undefined) } as unknown as BenchStore;
  const relay = new DebugRelay({ clock: clockFromFakeTimers(fake), store });
  relay.arm('a1', 's1', { idleTimeoutMs: 1_000 });
  const terms = relay.claimed(job, 'w1');
  return { fake, relay, terms };
}

const never = new AbortController().signal;

describe('the debug relay', () => {
  it('hands the armed session’s next job out with its terms, once', () => {
    const { relay, terms } = relayWithJob();
    expect(terms).toEqual({ idleTimeoutMs: 1_000, maxDebugMs: 3_600_000 });
    expect(relay.claimed({ jobId: 'job_2', agentId: 'a1', board: 'pico', sessionId: 's1' } as JobRecord, 'w1')).toBeUndefined();
  });

  it('closes a stream whose client went silent, tells the worker, and lets the next debugger attach', async () => {
    const { fake, relay } = relayWithJob();
    const { stream } = await relay.open('a1', 'job_1');
    await expect(relay.open('a1', 'job_1')).rejects.toEqual(new BenchError('debugger_attached', 'job job_1 on board pico already has a debugger attached (one at a time)'));
    fake.tick(STREAM_SILENCE_MS);
    const reason = "the debugger's client made no request for 60 s: it is gone";
    expect(await relay.events('w1', 'job_1', 0, never)).toEqual({ events: [{ stream, kind: 'open' }, { stream, kind: 'close', reason }], ended: false });
    expect(await relay.receive('a1', 'job_1', stream, 0, never)).toEqual({ text: '', closed: reason, sessionDue: 's1' });
    const next = await relay.open('a1', 'job_1');
    expect(next.stream).not.toBe(stream);
  });

  it('answers a worker’s waiting poll with the debugger’s bytes, and the debugger’s with the target’s', async () => {
    const { fake, relay } = relayWithJob();
    const { stream } = await relay.open('a1', 'job_1');
    await relay.events('w1', 'job_1', 0, never);
    const waiting = relay.events('w1', 'job_1', 20_000, never);
    await relay.send('a1', 'job_1', stream, '$g#67');
    expect(await waiting).toEqual({ events: [{ stream, kind: 'data', text: '$g#67' }], ended: false });
    const receiving = relay.receive('a1', 'job_1', stream, 20_000, never);
    let received = false;
    void receiving.then(() => (received = true));
    // The receive is waiting (nothing was there when it looked) before the target answers.
    await fake.tickAsync(1_000);
    expect(received).toBe(false);
    expect(relay.fromTarget('w1', 'job_1', stream, '+$00#00', undefined)).toBe(true);
    expect((await receiving).text).toBe('+$00#00');
    expect(relay.fromTarget('w2', 'job_1', stream, 'x', undefined)).toBe(false);
  });

  it('keeps one data event per run of sends, and drops what the worker has not taken of a replaced stream', async () => {
    const { fake, relay } = relayWithJob();
    const first = (await relay.open('a1', 'job_1')).stream;
    await relay.send('a1', 'job_1', first, '+');
    await relay.send('a1', 'job_1', first, '$g#67');
    expect(await relay.events('w1', 'job_1', 0, never)).toEqual({ events: [{ stream: first, kind: 'open' }, { stream: first, kind: 'data', text: '+$g#67' }], ended: false });
    await relay.send('a1', 'job_1', first, '$m0,4#fd');
    fake.tick(STREAM_SILENCE_MS);
    const second = (await relay.open('a1', 'job_1')).stream;
    await relay.send('a1', 'job_1', second, '+');
    fake.tick(STREAM_SILENCE_MS);
    const third = (await relay.open('a1', 'job_1')).stream;
    const reason = "the debugger's client made no request for 60 s: it is gone";
    // The worker saw the first stream open: it hears it closed, not the bytes nobody will answer.
    // The second it never saw: neither its open, its bytes nor its close is told.
    expect(await relay.events('w1', 'job_1', 0, never)).toEqual({ events: [{ stream: first, kind: 'close', reason }, { stream: third, kind: 'open' }], ended: false });
    expect(second).not.toBe(third);
  });

  it('lets the last receive after the job ended have the target’s last bytes and why the stream closed', async () => {
    const { relay } = relayWithJob();
    const { stream } = await relay.open('a1', 'job_1');
    relay.fromTarget('w1', 'job_1', stream, '$W00#b7', undefined);
    relay.jobEnded('job_1', 'job job_1 is done');
    expect(relay.has('job_1')).toBe(false);
    expect(await relay.receive('a1', 'job_1', stream, 20_000, never)).toEqual({ text: '$W00#b7', closed: 'job job_1 is done', sessionDue: null });
    // Received: the job is forgotten, and the store says why it cannot be debugged.
    await expect(relay.receive('a1', 'job_1', stream, 0, never)).rejects.toMatchObject({ code: 'job_not_debuggable' });
  });

  it('forgets an ended job whose last bytes nobody received within STREAM_SILENCE_MS', async () => {
    const { fake, relay } = relayWithJob();
    const { stream } = await relay.open('a1', 'job_1');
    relay.fromTarget('w1', 'job_1', stream, '$W00#b7', undefined);
    relay.jobEnded('job_1', 'job job_1 is done');
    fake.tick(STREAM_SILENCE_MS);
    await expect(relay.receive('a1', 'job_1', stream, 0, never)).rejects.toMatchObject({ code: 'job_not_debuggable' });
  });
});
