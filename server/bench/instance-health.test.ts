import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import type { BenchStore, JobRecord } from '../store/bench-store.js';
import { type BoardHealthRecord, healthyBoardRecord } from '../store/board-health-store.js';
import { INSTANCE_QUARANTINE_AFTER_FAILURES, InstanceHealth } from './instance-health.js';

/** Instance health over an in-memory board-health table (the only part of the store it uses). */
function health() {
  const rows = new Map<string, BoardHealthRecord>();
  const store = { boardHealth: { get: async (id: string) => rows.get(id) ?? healthyBoardRecord, put: async (id: string, record: BoardHealthRecord) => void rows.set(id, record) } } as unknown as BenchStore;
  return new InstanceHealth({ clock: clockFromFakeTimers(createClock(0)), store });
}

const timedOut: Pick<JobRecord, 'board' | 'instance' | 'state' | 'failure'> = {
  board: 'pico',
  instance: 'pico.2@w1',
  state: 'failed',
  failure: { kind: 'timeout', message: 'no debugger connected for 300 s' },
};

describe('InstanceHealth', () => {
  it('does not count a debug job that timed out waiting for its debugger against its instance', async () => {
    const instances = health();
    for (let i = 0; i < INSTANCE_QUARANTINE_AFTER_FAILURES + 1; i++) await instances.jobEnded(timedOut, { debug: true });
    expect(await instances.get('pico.2@w1')).toEqual(healthyBoardRecord);
  });

  it('still counts the other infrastructure failures of a debug job, and the timeouts of ordinary jobs', async () => {
    const instances = health();
    await instances.jobEnded({ ...timedOut, failure: { kind: 'flash-failed', message: 'no answer from the probe' } }, { debug: true });
    expect((await instances.get('pico.2@w1')).consecutiveFailures).toBe(1);
    await instances.jobEnded(timedOut);
    const quarantined = await instances.jobEnded(timedOut);
    expect(quarantined?.quarantine?.reason).toContain('timeout');
  });
});
