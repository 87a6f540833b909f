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
    const { relay } = relayWithJob();
    const { stream } = await relay.open('a1', 'job_1');
    await relay.events('w1', 'job_1', 0, never);
    const waiting = relay.events('w1', 'job_1', 20_000, never);
    await relay.send('a1', 'job_1', stream, '$g#67');
    expect(await waiting).toEqual({ events: [{ stream, kind: 'data', text: '$g#67' }], ended: false });
    const receiving = relay.receive('a1', 'job_1', stream, 20_000, never);
    expect(relay.fromTarget('w1', 'job_1', stream, '+$00#00', undefined)).toBe(true);
    expect((await receiving).text).toBe('+$00#00');
    expect(relay.fromTarget('w2', 'job_1', stream, 'x', undefined)).toBe(false);
  });
});
