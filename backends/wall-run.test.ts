import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../core/clock.js';
import { BackendError, type RunStop } from './backend.js';
import { type EndRun, waitForWallRun, type WallRunOptions } from './wall-run.js';

/** A device stand-in: host time since release on a fake clock, one change watcher, the active run's `end`. */
function harness(overrides: Partial<WallRunOptions> = {}) {
  const fake = createClock(10_000);
  const releasedAtMs = fake.now;
  const watchers = new Set<() => void>();
  const state: { active: EndRun | undefined; activeCalls: number; end: EndRun | undefined } = { active: undefined, activeCalls: 0, end: undefined };
  const options: WallRunOptions = {
    clock: clockFromFakeTimers(fake),
    durationNanos: 1_000_000_000,
    elapsedNanos: () => (fake.now - releasedAtMs) * 1_000_000,
    watch: (onChange, end) => {
      state.end = end;
      watchers.add(onChange);
      return () => watchers.delete(onChange);
    },
    onActive: (end) => {
      state.active = end;
      state.activeCalls++;
    },
    ...overrides,
  };
  const change = () => [...watchers].forEach((w) => w());
  return { fake, watchers, state, options, change };
}

/** The run's outcome without awaiting forever: a settled promise's value, or 'pending'. */
async function outcome(run: Promise<RunStop>): Promise<RunStop | BackendError | 'pending'> {
  return Promise.race([run.catch((err: unknown) => err as BackendError), new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

describe('waitForWallRun', () => {
  it('stops elapsed once the duration of host time has passed, and cleans up', async () => {
    const h = harness();
    const run = waitForWallRun(h.options);
    h.fake.tick(999);
    expect(await outcome(run)).toBe('pending');
    expect(h.state.active).toBeTypeOf('function');
    h.fake.tick(1);
    expect(await outcome(run)).toEqual({ reason: 'elapsed', elapsedNanos: 1_000_000_000 });
    expect([h.watchers.size, h.state.active, h.fake.countTimers()]).toEqual([0, undefined, 0]);
  });

  it('reports the later of duration and elapsed time when the timer fires late', async () => {
    const h = harness({ durationNanos: 0 });
    h.fake.setSystemTime(h.fake.now + 5);
    const run = waitForWallRun(h.options);
    h.fake.tick(0);
    expect(await outcome(run)).toEqual({ reason: 'elapsed', elapsedNanos: 5_000_000 });
  });

  it('stops until at once when until already holds, and after a change otherwise', async () => {
    const at = harness({ until: () => true });
    expect(await outcome(waitForWallRun(at.options))).toEqual({ reason: 'until', elapsedNanos: 0 });

    let seen = false;
    const later = harness({ until: () => seen });
    const run = waitForWallRun(later.options);
    later.fake.tick(30);
    later.change();
    expect(await outcome(run)).toBe('pending');
    seen = true;
    later.change();
    expect(await outcome(run)).toEqual({ reason: 'until', elapsedNanos: 30_000_000 });
  });

  it('is cancelled when its signal aborts, with the reason as cause', async () => {
    const controller = new AbortController();
    const h = harness({ signal: controller.signal });
    const run = waitForWallRun(h.options);
    const reason = new Error('job cancelled');
    controller.abort(reason);
    const result = await outcome(run);
    expect(result).toBeInstanceOf(BackendError);
    expect(result).toMatchObject({ kind: 'cancelled', cause: reason });
    expect([h.watchers.size, h.state.active, h.fake.countTimers()]).toEqual([0, undefined, 0]);
  });

  it('ends with what check sees after a change, before looking at until', async () => {
    let crashed = false;
    const h = harness({ until: () => true, check: () => (crashed ? { reason: 'crashed', message: 'CPU abort', elapsedNanos: 7 } : undefined) });
    const first = await outcome(waitForWallRun(h.options));
    expect(first).toEqual({ reason: 'until', elapsedNanos: 0 });
    crashed = true;
    expect(await outcome(waitForWallRun(h.options))).toEqual({ reason: 'crashed', message: 'CPU abort', elapsedNanos: 7 });
  });

  it('rejects with an error that check returns', async () => {
    const h = harness({ check: () => new BackendError('internal', 'emulator exited unexpectedly') });
    expect(await outcome(waitForWallRun(h.options))).toMatchObject({ kind: 'internal', message: 'emulator exited unexpectedly' });
  });

  it('can be ended from outside (reset, close, an exit) exactly once', async () => {
    const h = harness();
    const run = waitForWallRun(h.options);
    h.state.active!(new BackendError('cancelled', 'run ended because the device was reset or closed'));
    h.state.end!({ reason: 'exited', exitCode: 0, elapsedNanos: 0 });
    expect(await outcome(run)).toMatchObject({ kind: 'cancelled', message: 'run ended because the device was reset or closed' });
    expect(h.state.activeCalls).toBe(2);
  });

  it('settles a run that watch ends at once, leaving nothing behind', async () => {
    const h = harness({
      watch: (onChange, end) => {
        end({ reason: 'exited', exitCode: 3, elapsedNanos: 0 });
        return () => undefined;
      },
    });
    expect(await outcome(waitForWallRun(h.options))).toEqual({ reason: 'exited', exitCode: 3, elapsedNanos: 0 });
    expect([h.state.active, h.fake.countTimers()]).toEqual([undefined, 0]);
  });
});
