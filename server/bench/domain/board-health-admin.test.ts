import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../http/logger.js';
import type { BoardHealthRecord } from '../../storage/bench/board-health-store.js';
import { BoardHealthAdmin } from './board-health-admin.js';
import { healthBody } from '../views/bench-views.js';

/** A BoardHealthAdmin whose one board's health keeper answers `record`; only what boardHealth reads is real. */
function adminOver(record: BoardHealthRecord) {
  const logger = memoryLogger();
  const control = { health: async () => record, release: async () => {} };
  const boards = { healthControl: (id: string) => (id === 'b1' ? { name: 'probe', control } : undefined) };
  const admin = new BoardHealthAdmin({ boards, logger } as unknown as ConstructorParameters<typeof BoardHealthAdmin>[0]);
  return { admin, logger };
}

describe('BoardHealthAdmin.boardHealth', () => {
  it('gives a well-formed record, which the view shapes', async () => {
    const record = { consecutiveFailures: 3, lastFailure: 'probe lost', quarantine: { sinceMs: 1_700_000_000_000, reason: 'three failures' } };
    const { admin, logger } = adminOver(record);
    const health = await admin.boardHealth('b1');
    expect(health).toEqual({ backend: 'probe', record });
    expect(healthBody(health!).quarantined_since).toBe('2023-11-14T22:13:20.000Z');
    expect(logger.lines).toEqual([]);
  });

  // The view shapes outside any try (decision 0880): a record it cannot show must stop here, as
  // null and a log line, or GET /admin and the console answer 500 for every board.
  it.each([
    ['a quarantine time that is no date', { consecutiveFailures: 1, lastFailure: undefined, quarantine: { sinceMs: Number.NaN, reason: 'x' } }],
    ['a quarantine time past what a date holds', { consecutiveFailures: 1, lastFailure: undefined, quarantine: { sinceMs: 9e15, reason: 'x' } }],
    ['a failure count that is no count', { consecutiveFailures: -1, lastFailure: undefined, quarantine: undefined }],
  ])('gives null and logs it for %s', async (_what, record) => {
    const { admin, logger } = adminOver(record);
    expect(await admin.boardHealth('b1')).toBeNull();
    expect(logger.lines).toEqual(['error: reading the health of board b1 (kept for its probe backend) failed']);
  });

  it('the view indeed cannot shape a quarantine time that is no date (why the check is needed)', () => {
    const record = { consecutiveFailures: 1, lastFailure: undefined, quarantine: { sinceMs: Number.NaN, reason: 'x' } };
    expect(() => healthBody({ backend: 'probe', record })).toThrow(RangeError);
  });

  it('gives null, without a log line, for a board no backend keeps health for', async () => {
    const { admin, logger } = adminOver({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
    expect(await admin.boardHealth('other')).toBeNull();
    expect(logger.lines).toEqual([]);
  });
});
