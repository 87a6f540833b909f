import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { type Clock, clockFromFakeTimers } from '../../../core/clock.js';
import { memoryLogger } from '../../http/logger.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { DatabaseUnavailableError } from '../../storage/storage-faults.js';
import { SessionQueue, WAITER_ALIVE_MS } from './session-queue.js';

const PICO = { queue: 'pico', pool: 'pico' };

/** A store with agents a, b and c, and a queue on it (one replica's; more share the store). */
async function queueOnStore(clock: Clock, store = new SqliteBenchStore(':memory:')) {
  for (const agentId of ['a', 'b', 'c']) if (!(await store.getAgent(agentId))) await store.insertAgent({ agentId, label: agentId, tokenSha256: agentId.repeat(64), createdAtMs: 0 });
  return { store, queue: new SessionQueue({ clock, store: store.sessionQueue, logger: memoryLogger(), retryMs: 1_000 }) };
}

/** An AbortSignal that counts the abort listeners attached to it at once. */
function countingSignal(): { signal: AbortSignal; controller: AbortController; attached: () => number } {
  const controller = new AbortController();
  const signal = controller.signal;
  let attached = 0;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
    if (args[0] === 'abort') attached += 1;
    add(...args);
  }) as AbortSignal['addEventListener'];
  signal.removeEventListener = ((...args: Parameters<AbortSignal['removeEventListener']>) => {
    if (args[0] === 'abort') attached -= 1;
    remove(...args);
  }) as AbortSignal['removeEventListener'];
  return { signal, controller, attached: () => attached };
}

describe('SessionQueue', () => {
  it('keeps one abort listener through a long wait of many retries, and none after it', async () => {
    const fake = createClock(0);
    const { queue } = await queueOnStore(clockFromFakeTimers(fake));
    const { signal, attached } = countingSignal();
    let attempts = 0;
    const waiting = queue.wait(PICO, 'a', { waitMs: 300_000, signal, attempt: async () => (++attempts >= 200 ? 'lease' : undefined) });
    await fake.tickAsync(0);
    while (attempts < 200) await fake.tickAsync(1_000);
    expect(await waiting).toEqual({ value: 'lease', position: 1 });
    expect(attempts).toBe(200);
    expect(attached()).toBe(0);
  });

  it('leaves the queue at once when the signal aborts, with its position', async () => {
    const fake = createClock(0);
    const { queue, store } = await queueOnStore(clockFromFakeTimers(fake));
    const head = countingSignal();
    const second = countingSignal();
    const first = queue.wait(PICO, 'a', { waitMs: 60_000, signal: head.signal, attempt: async () => undefined });
    await fake.tickAsync(0);
    const next = queue.wait(PICO, 'b', { waitMs: 60_000, signal: second.signal, attempt: async () => undefined });
    await fake.tickAsync(0);
    expect(await queue.lineOf('pico', 'b')).toEqual({ waiting: 2, position: 2 });
    expect(second.attached()).toBe(1);
    second.controller.abort();
    expect(await next).toEqual({ position: 2 });
    expect(second.attached()).toBe(0);
    // Its client went away: it left the store's queue too.
    expect(await store.sessionQueue.line('pico', 'b', 0)).toEqual({ waiting: 1, position: null });
    head.controller.abort();
    expect(await first).toEqual({ position: 1 });
  });

  it('grants first come first served across two replicas sharing the store, each head woken by the store when the one before leaves', async () => {
    const fake = createClock(0);
    const clock = clockFromFakeTimers(fake);
    const one = await queueOnStore(clock);
    const two = await queueOnStore(clock, one.store);
    let free = 0;
    const granted: string[] = [];
    const attempt = (agent: string) => async () => {
      if (free === 0) return undefined;
      free--;
      granted.push(agent);
      return agent;
    };
    const options = (agent: string) => ({ waitMs: 60_000, signal: new AbortController().signal, attempt: attempt(agent) });
    // a through replica one, b through two, c through one: in this order.
    const waits = [one.queue.wait(PICO, 'a', options('a'))];
    await fake.tickAsync(0);
    waits.push(two.queue.wait(PICO, 'b', options('b')));
    await fake.tickAsync(0);
    waits.push(one.queue.wait(PICO, 'c', options('c')));
    await fake.tickAsync(0);
    expect(await two.queue.lineOf('pico', 'c')).toEqual({ waiting: 3, position: 3 });
    // Three instances free at once, with no clock time passing: each grant wakes the next head (events, not the poll).
    free = 3;
    one.queue.nudge('pico');
    await Promise.all(waits);
    expect(granted).toEqual(['a', 'b', 'c']);
    expect(fake.now).toBe(0);
  });

  it('keeps one line per pool across replicas: a later waiter for an instance never takes it from an earlier waiter for the pool, and a pool waiter leaves an earlier instance waiter its instance (decision 1030)', async () => {
    const fake = createClock(0);
    const clock = clockFromFakeTimers(fake);
    const one = await queueOnStore(clock);
    const two = await queueOnStore(clock, one.store);
    const PICO_2 = { queue: 'pico.2@w1', pool: 'pico' };
    /** The instances free now; each attempt takes the first it may (an instance waiter only its own). */
    const free = new Set<string>();
    const tries: Array<{ agent: string; except: string[] }> = [];
    const attempt = (agent: string, accepts?: string) => async (except: ReadonlySet<string>) => {
      tries.push({ agent, except: [...except] });
      const taken = [...free].find((i) => !except.has(i) && (accepts === undefined || i === accepts));
      if (taken === undefined) return undefined;
      free.delete(taken);
      tries.push({ agent: `${agent} got ${taken}`, except: [] });
      return `${agent}:${taken}`;
    };
    const options = (agent: string, accepts?: string) => ({ waitMs: 60_000, signal: new AbortController().signal, attempt: attempt(agent, accepts) });
    // a waits for the pool through replica one, then b for pico.2 through replica two.
    const a = one.queue.wait(PICO, 'a', options('a'));
    await fake.tickAsync(0);
    const b = two.queue.wait(PICO_2, 'b', options('b', 'pico.2@w1'));
    await fake.tickAsync(0);
    expect(await two.queue.lineOf('pico', 'b')).toEqual({ waiting: 2, position: 2 });
    expect(await two.queue.lineOf('pico', 'b', 'pico.2@w1')).toEqual({ waiting: 2, position: 2 });
    tries.length = 0;
    // pico.2 frees; both replicas hear it with no clock time passing: a gets it, b never even tries while a waits.
    free.add('pico.2@w1');
    two.queue.nudge('pico.2@w1');
    one.queue.nudge('pico.2@w1');
    expect(await a).toEqual({ value: 'a:pico.2@w1', position: 1 });
    // b tried only once a had left the line (and found nothing).
    expect(tries.map((t) => t.agent).filter((t) => t !== 'a')[0]).toBe('a got pico.2@w1');
    // Now c waits for the pool through replica one, behind b: pico.1 freeing goes to c, pico.2 is left to b.
    const c = one.queue.wait(PICO, 'c', options('c'));
    await fake.tickAsync(0);
    free.add('pico.1@w1');
    one.queue.nudge('pico.1@w1');
    expect(await c).toEqual({ value: 'c:pico.1@w1', position: 2 });
    expect(tries.filter((t) => t.agent === 'c').every((t) => t.except.includes('pico.2@w1'))).toBe(true);
    free.add('pico.2@w1');
    two.queue.nudge('pico.2@w1');
    expect(await b).toEqual({ value: 'b:pico.2@w1', position: 1 });
    expect(fake.now).toBe(0);
  });

  it('keeps a wake that arrives while the head attempts, and looks again at once instead of at the next poll', async () => {
    const fake = createClock(0);
    const { queue } = await queueOnStore(clockFromFakeTimers(fake));
    let attempts = 0;
    // The first attempt finds nothing, but a lease is freed meanwhile (the store's event, delivered
    // while no pause is pending); the second attempt gets it.
    const attempt = async () => {
      attempts += 1;
      if (attempts === 1) {
        queue.nudge('pico');
        return undefined;
      }
      return 'lease';
    };
    let settled = false;
    const waiting = queue.wait(PICO, 'a', { waitMs: 60_000, signal: new AbortController().signal, attempt }).finally(() => {
      settled = true;
    });
    // The clock never moves: a lost wake would leave the waiter in its 1 s poll, unsettled.
    await fake.tickAsync(0);
    expect({ settled, attempts, nowMs: fake.now }, 'the wake during attempt() was lost: the waiter sat in its poll').toEqual({ settled: true, attempts: 2, nowMs: 0 });
    expect(await waiting).toEqual({ value: 'lease', position: 1 });
  });

  it('counts a waiter of a replica that died only until its liveness runs out', async () => {
    const fake = createClock(0);
    const clock = clockFromFakeTimers(fake);
    const { queue, store } = await queueOnStore(clock);
    // A replica that died while its request waited: its row stays, never renewed.
    await store.sessionQueue.enqueue({ waiterId: 'wtr_dead', queue: 'pico', pool: 'pico', agentId: 'c', enqueuedAtMs: 0, aliveUntilMs: WAITER_ALIVE_MS });
    let attempts = 0;
    const waiting = queue.wait(PICO, 'a', { waitMs: 60_000, signal: new AbortController().signal, attempt: async () => (++attempts > 0 ? 'lease' : undefined) });
    await fake.tickAsync(WAITER_ALIVE_MS - 1);
    expect(attempts).toBe(0);
    expect(await queue.lineOf('pico', 'a')).toEqual({ waiting: 2, position: 2 });
    await fake.tickAsync(1_000);
    expect(await waiting).toEqual({ value: 'lease', position: 1 });
  });

  it('waits out a database restart inside the wait (Retry-After of the fault) and is granted after it', async () => {
    const fake = createClock(0);
    const { queue } = await queueOnStore(clockFromFakeTimers(fake));
    const away = new DatabaseUnavailableError('the database is restarting', 2);
    let attempts = 0;
    const waiting = queue.wait(PICO, 'a', {
      waitMs: 60_000,
      signal: new AbortController().signal,
      attempt: async () => {
        attempts++;
        if (attempts <= 2) throw away;
        return 'lease';
      },
    });
    await fake.tickAsync(0);
    expect(attempts).toBe(1);
    // The next try waits for the fault's Retry-After (2 s), not the queue's retry (1 s).
    await fake.tickAsync(1_999);
    expect(attempts).toBe(1);
    await fake.tickAsync(1);
    expect(attempts).toBe(2);
    await fake.tickAsync(2_000);
    expect(await waiting).toEqual({ value: 'lease', position: 1 });
  });

  it('answers with the fault when its wait runs out while the database is still away, and leaves the queue', async () => {
    const fake = createClock(0);
    const { queue, store } = await queueOnStore(clockFromFakeTimers(fake));
    const away = new DatabaseUnavailableError('the database is restarting', 1);
    const waiting = queue.wait(PICO, 'a', { waitMs: 5_000, signal: new AbortController().signal, attempt: async () => Promise.reject(away) });
    const settled = waiting.then(() => 'granted', (err: unknown) => err);
    await fake.tickAsync(5_000);
    expect(await settled).toBe(away);
    expect(await store.sessionQueue.line('pico', 'a', fake.now)).toEqual({ waiting: 0, position: null });
  });

  it('does not hide a bug: an error that is not a storage fault ends the wait at once', async () => {
    const fake = createClock(0);
    const { queue } = await queueOnStore(clockFromFakeTimers(fake));
    const bug = new TypeError('not a fault of the database');
    const waiting = queue.wait(PICO, 'a', { waitMs: 60_000, signal: new AbortController().signal, attempt: async () => Promise.reject(bug) });
    const settled = waiting.then(() => 'granted', (err: unknown) => err);
    await fake.tickAsync(0);
    expect(await settled).toBe(bug);
  });

  it('renews its liveness again on the next turn when a renewal met the database away (it stays counted)', async () => {
    const fake = createClock(0);
    const clock = clockFromFakeTimers(fake);
    const store = new SqliteBenchStore(':memory:');
    await store.insertAgent({ agentId: 'a', label: 'a', tokenSha256: 'a'.repeat(64), createdAtMs: 0 });
    let failedRenewals = 0;
    const flaky = Object.create(store.sessionQueue) as typeof store.sessionQueue;
    flaky.renew = async (row) => {
      if (failedRenewals++ === 0) throw new DatabaseUnavailableError('the database is restarting', 1);
      return store.sessionQueue.renew(row);
    };
    const queue = new SessionQueue({ clock, store: flaky, logger: memoryLogger(), retryMs: 1_000 });
    const abort = new AbortController();
    const waiting = queue.wait(PICO, 'a', { waitMs: 60_000, signal: abort.signal, attempt: async () => undefined });
    // Past its first liveness (10 s): counted only if a renewal after the failed one went through.
    await fake.tickAsync(WAITER_ALIVE_MS + 500);
    expect(failedRenewals).toBeGreaterThanOrEqual(2);
    expect(await queue.lineOf('pico', 'a')).toEqual({ waiting: 1, position: 1 });
    abort.abort();
    await waiting;
  });
});
