import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { type UartDrainEnd, waitForUartQuiet } from './wait-for-uart-quiet.js';

/** A drain on fake timers, with a UART whose activity and close the test drives. */
function drain(options: { quietMs?: number; timeoutMs?: number; signal?: AbortSignal } = {}) {
  const fake = createClock(0);
  const listeners = new Set<() => void>();
  let close!: () => void;
  const closed = new Promise<void>((resolve) => (close = resolve));
  let result: UartDrainEnd | undefined;
  const done = waitForUartQuiet({
    clock: clockFromFakeTimers(fake),
    quietMs: options.quietMs ?? 200,
    timeoutMs: options.timeoutMs ?? 2000,
    onActivity: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    closed,
    signal: options.signal,
  }).then((how) => (result = how));
  return {
    fake,
    listeners,
    close,
    done,
    get result() {
      return result;
    },
    bytes: () => listeners.forEach((listener) => listener()),
    /** Advances fake time and lets the promise callbacks run. */
    tick: async (ms: number) => {
      fake.tick(ms);
      await Promise.resolve();
      await Promise.resolve();
    },
  };
}

describe('waitForUartQuiet', () => {
  it('ends after quietMs without bytes, and not before', async () => {
    const d = drain();
    await d.tick(199);
    expect(d.result).toBeUndefined();
    await d.tick(1);
    expect(await d.done).toBe('quiet');
  });

  it('restarts the quiet period on every byte', async () => {
    const d = drain();
    await d.tick(150);
    d.bytes();
    await d.tick(150);
    expect(d.result).toBeUndefined();
    d.bytes();
    await d.tick(199);
    expect(d.result).toBeUndefined();
    await d.tick(1);
    expect(await d.done).toBe('quiet');
    expect(d.fake.now).toBe(500);
  });

  it('is bounded by timeoutMs however the bytes keep coming', async () => {
    const d = drain({ quietMs: 200, timeoutMs: 1000 });
    for (let ms = 0; ms < 1000; ms += 100) {
      d.bytes();
      await d.tick(100);
    }
    expect(await d.done).toBe('timeout');
    expect(d.fake.now).toBe(1000);
  });

  it('ends as soon as the socket closes: no more bytes can come', async () => {
    const d = drain();
    await d.tick(50);
    d.close();
    expect(await d.done).toBe('closed');
    expect(d.fake.now).toBe(50);
  });

  it('ends when its signal aborts, also one aborted before it started', async () => {
    const controller = new AbortController();
    const d = drain({ signal: controller.signal });
    await d.tick(10);
    controller.abort();
    expect(await d.done).toBe('aborted');
    expect(await drain({ signal: AbortSignal.abort() }).done).toBe('aborted');
  });

  it('leaves no timer and no listener behind, on every path', async () => {
    const quiet = drain();
    await quiet.tick(200);
    const closed = drain();
    closed.close();
    await closed.done;
    const controller = new AbortController();
    const aborted = drain({ signal: controller.signal });
    controller.abort();
    await aborted.done;
    for (const d of [quiet, closed, aborted]) {
      expect(await d.done).toBeDefined();
      expect(d.fake.countTimers()).toBe(0);
      expect(d.listeners.size).toBe(0);
    }
  });
});
