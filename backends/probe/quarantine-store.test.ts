import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterFailure, afterSuccess, type BoardHealth, failureSummary, healthyBoard, InMemoryQuarantineStore, quarantineReason, SUMMARY_MAX_CHARS } from './quarantine-store.js';

describe('board health', () => {
  it('quarantines on the third consecutive failure with the documented reason', () => {
    let health: BoardHealth = healthyBoard;
    health = afterFailure(health, 'no probe found\nlong tail', 3, 1);
    health = afterFailure(health, 'serial device vanished', 3, 2);
    expect(health.quarantine).toBeUndefined();
    health = afterFailure(health, 'flash on b failed (exit status 1); last output:\n** Verify Failed **', 3, 3);
    expect(health.quarantine).toEqual({
      sinceMs: 3,
      reason: 'quarantined after 3 consecutive infrastructure failures: flash on b failed (exit status 1); last error: ** Verify Failed **',
    });
  });

  it("keeps the tail's last error line, not the tool's closing chatter, in one line", () => {
    const openocd = [
      'flash on f4 (openocd -f interface/stlink.cfg) flash or verify failed (exit status 1); last output:',
      'Open On-Chip Debugger 0.12.0',
      '** Verify Started **',
      'Error: checksum mismatch - attempting binary compare',
      '** Verify Failed **',
      'shutdown command invoked',
    ].join('\n');
    expect(failureSummary(openocd)).toBe('flash on f4 (openocd -f interface/stlink.cfg) flash or verify failed (exit status 1); last error: ** Verify Failed **');
    const probeRs = 'flash on pico (probe-rs download) probe not found (exit status 1); last output:\n      Error: Probe was not found.\n';
    expect(failureSummary(probeRs)).toBe('flash on pico (probe-rs download) probe not found (exit status 1); last error: Error: Probe was not found.');
    // No line names an error: the last one is kept. A single line stays as it is.
    expect(failureSummary('reset on b timed out; last output:\nInfo : halted\nInfo : still waiting')).toBe('reset on b timed out; last error: Info : still waiting');
    expect(failureSummary('serial device vanished')).toBe('serial device vanished');
    expect(failureSummary('flash failed 2\nsome detail')).toBe('flash failed 2');
    expect(failureSummary(`x; last output:\nError: ${'y'.repeat(1000)}`)).toHaveLength(SUMMARY_MAX_CHARS);
    expect(afterFailure(healthyBoard, openocd, 1, 0).quarantine?.reason).not.toContain('\n');
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
