import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterFailure, afterSuccess, type BoardHealth, healthyBoard, InMemoryQuarantineStore, quarantineReason } from './quarantine-store.js';

describe('board health', () => {
  it('quarantines on the third consecutive failure with the documented reason', () => {
    let health: BoardHealth = healthyBoard;
    health = afterFailure(health, 'no probe found\nlong tail', 3, 1);
    health = afterFailure(health, 'serial device vanished', 3, 2);
    expect(health.quarantine).toBeUndefined();
    health = afterFailure(health, 'flash on b failed (exit status 1); last output:\n** Verify Failed **', 3, 3);
    expect(health.quarantine).toEqual({
      sinceMs: 3,
      reason: 'quarantined after 3 consecutive infrastructure failures: flash on b failed (exit status 1); last output:',
    });
  });

  it('keeps the original quarantine time and reason on later failures', () => {
    let health: BoardHealth = healthyBoard;
    for (let i = 0; i < 5; i++) health = afterFailure(health, `failure ${i}`, 2, i);
    expect(health.quarantine).toEqual({ sinceMs: 1, reason: quarantineReason(2, 'failure 1') });
    expect(health.lastFailure).toBe('failure 4');
    expect(health.consecutiveFailures).toBe(5);
  });

  it('is quarantined exactly when the last `threshold` events since a success are all failures (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.boolean(), { maxLength: 30 }), (threshold, events) => {
        let health: BoardHealth = healthyBoard;
        events.forEach((ok, i) => {
          health = ok ? afterSuccess() : afterFailure(health, `f${i}`, threshold, i);
        });
        const lastSuccess = events.lastIndexOf(true);
        const failuresSince = events.length - lastSuccess - 1;
        expect(health.consecutiveFailures).toBe(failuresSince);
        expect(health.quarantine !== undefined).toBe(failuresSince >= threshold);
      }),
    );
  });

  it('the in-memory store treats unknown boards as healthy and keeps copies', async () => {
    const store = new InMemoryQuarantineStore();
    expect(await store.get('pico')).toEqual(healthyBoard);
    const health = afterFailure(healthyBoard, 'x', 3, 0);
    await store.put('pico', health);
    health.consecutiveFailures = 99;
    expect((await store.get('pico')).consecutiveFailures).toBe(1);
  });
});
