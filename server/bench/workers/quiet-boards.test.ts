import { describe, expect, it } from 'vitest';
import { QUIET_MARK_MAX_AGE_MS, QuietBoards } from './quiet-boards.js';

describe('QuietBoards (decision 0980)', () => {
  it('marks a board quiet when the store found nothing waiting and nothing was queued here since it was asked', () => {
    const quiet = new QuietBoards();
    quiet.answered('pico', quiet.asking('pico'), false, 0);
    expect(quiet.take(['pico'], 0)).toBe(true);
    // A mark serves one claim.
    expect(quiet.take(['pico'], 0)).toBe(false);
  });

  it('does not mark a board when a job was queued here while the store was asked (committed after its look)', () => {
    const quiet = new QuietBoards();
    const asked = quiet.asking('pico');
    quiet.queued('pico');
    quiet.answered('pico', asked, false, 0);
    expect(quiet.take(['pico'], 0)).toBe(false);
  });

  it('does not mark a board the store found waiting, and clears a mark when a job is queued after it', () => {
    const quiet = new QuietBoards();
    quiet.answered('pico', quiet.asking('pico'), true, 0);
    expect(quiet.take(['pico'], 0)).toBe(false);
    quiet.answered('pico', quiet.asking('pico'), false, 0);
    quiet.queued('pico');
    expect(quiet.take(['pico'], 0)).toBe(false);
  });

  it('waits only when every board of the claim is quiet', () => {
    const quiet = new QuietBoards();
    quiet.answered('pico', quiet.asking('pico'), false, 0);
    expect(quiet.take(['pico', 'uno'], 0)).toBe(false);
    expect(quiet.take([], 0)).toBe(false);
  });

  it('serves only a claim that comes soon after the end: an older mark is dropped (its worker was away, others may have queued)', () => {
    const quiet = new QuietBoards();
    quiet.answered('pico', quiet.asking('pico'), false, 5_000);
    expect(quiet.take(['pico'], 5_000 + QUIET_MARK_MAX_AGE_MS + 1)).toBe(false);
    quiet.answered('pico', quiet.asking('pico'), false, 9_000);
    expect(quiet.take(['pico'], 9_000 + QUIET_MARK_MAX_AGE_MS)).toBe(true);
  });
});
