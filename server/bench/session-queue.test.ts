import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { SessionQueue } from './session-queue.js';

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
    const queue = new SessionQueue({ clock: clockFromFakeTimers(fake), retryMs: 1_000 });
    const { signal, attached } = countingSignal();
    let attempts = 0;
    const waiting = queue.wait('pico', 'agent', { waitMs: 300_000, signal, attempt: async () => (++attempts >= 200 ? 'lease' : undefined) });
    while (attempts < 200) await fake.tickAsync(1_000);
    expect(await waiting).toEqual({ value: 'lease', position: 1 });
    expect(attempts).toBe(200);
    expect(attached()).toBe(0);
  });

  it('leaves the queue at once when the signal aborts, with its position', async () => {
    const fake = createClock(0);
    const queue = new SessionQueue({ clock: clockFromFakeTimers(fake), retryMs: 1_000 });
    const head = countingSignal();
    const second = countingSignal();
    const first = queue.wait('pico', 'a', { waitMs: 60_000, signal: head.signal, attempt: async () => undefined });
    const next = queue.wait('pico', 'b', { waitMs: 60_000, signal: second.signal, attempt: async () => undefined });
    await fake.tickAsync(0);
    expect(second.attached()).toBe(1);
    second.controller.abort();
    expect(await next).toEqual({ position: 2 });
    expect(second.attached()).toBe(0);
    head.controller.abort();
    expect(await first).toEqual({ position: 1 });
  });
});
