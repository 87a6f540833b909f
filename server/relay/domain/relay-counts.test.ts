import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { RelayError as CoreRelayError, problemCodes } from '../../../core/relay/problem.js';
import { RELAY_ERROR_CODES, RelayRefusal, invalidInputAt } from './relay-errors.js';
import { RelayCounts, VOTE_REFUSALS, voteRefusalClass } from './relay-counts.js';
import { unknownSliceHash } from './statement-log.js';
import { voteTimeInputProblem } from './statement-time.js';

describe('RelayCounts', () => {
  it('counts a vote by what storing it did', () => {
    const counts = new RelayCounts();
    counts.voteTaken({ stored: true, duplicate: false, equivocation: false });
    counts.voteTaken({ stored: true, duplicate: false, equivocation: true });
    counts.voteTaken({ stored: false, duplicate: true, equivocation: false });
    counts.voteTaken({ stored: false, duplicate: true, equivocation: false });
    expect(counts.votes).toEqual({ stored: 1, equivocation: 1, duplicate: 2 });
  });

  it('classes the refusals of the vote use case as an operator reads them', () => {
    const nowMs = Date.UTC(2026, 10, 30, 12);
    const ahead = voteTimeInputProblem(nowMs / 1000 + 3600, nowMs)!;
    expect(voteRefusalClass(new RelayRefusal('item_not_found', 'no such item'))).toBe('unknown_item');
    expect(voteRefusalClass(new RelayRefusal('signer_not_registered', 'POST /register first'))).toBe('unregistered_voter');
    expect(voteRefusalClass(invalidInputAt(['body'], [{ path: ['sig'], code: 'not_voter_signature' }]))).toBe('bad_signature');
    expect(voteRefusalClass(invalidInputAt(['body'], [ahead]))).toBe('clock_ahead');
    expect(voteRefusalClass(unknownSliceHash('0'.repeat(64)))).toBe('unknown_slice');
    expect(voteRefusalClass(invalidInputAt(['body'], [{ path: ['item'], code: 'not_path_item' }]))).toBe('wrong_item');
    expect(voteRefusalClass(invalidInputAt(['body'], [{ path: ['value'], code: 'not_one_of' }]))).toBe('malformed');
    expect(voteRefusalClass(new CoreRelayError('invalid vote'))).toBe('malformed');
    expect(voteRefusalClass(new RelayRefusal('credential_invalid', 'unknown credential'))).toBe('other');
  });

  it('counts no refusal for an error that is none (a storage fault, a bug)', () => {
    const counts = new RelayCounts();
    expect(counts.voteRefused(new Error('SQLITE_IOERR'))).toBe(false);
    expect(counts.voteRefused(undefined)).toBe(false);
    expect(Object.values(counts.voteRefusals).every((n) => n === 0)).toBe(true);
  });

  it('keeps every refusal in one of its fixed classes: a bounded label whatever the refusal', () => {
    const refusal = fc.oneof(
      fc.constantFrom(...RELAY_ERROR_CODES).map((code) => new RelayRefusal(code, 'refused')),
      fc.array(fc.constantFrom(...problemCodes), { maxLength: 3 }).map((codes) => invalidInputAt(['body'], codes.map((code) => ({ path: ['x'], code })))),
    );
    fc.assert(
      fc.property(refusal, (error) => {
        const counts = new RelayCounts();
        expect(counts.voteRefused(error)).toBe(true);
        expect(Object.keys(counts.voteRefusals)).toEqual([...VOTE_REFUSALS]);
        expect(Object.values(counts.voteRefusals).reduce((a, b) => a + b)).toBe(1);
      }),
    );
  });
});
