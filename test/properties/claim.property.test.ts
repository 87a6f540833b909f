import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../core/relay/canonical-json.js';
import { claimId, claimKinds, validateClaim } from '../../core/relay/claim.js';

// String-only work: thousands of runs cost about a second.
const NUM_RUNS = 1000;

/**
 * Strings from a tiny alphabet that holds the troublemakers: the separator, other line breaks, an
 * astral character and both halves of a surrogate pair on their own. A small alphabet makes fast-check
 * find colliding pairs quickly if validation ever lets one through.
 */
const tricky = fc
  .array(fc.constantFrom('a', 'b', '\n', '\r', '\u{1F600}', '\ud83d', '\ude00', 'é'), { maxLength: 6 })
  .map((parts) => parts.join(''));
const kindArb = fc.oneof(fc.constantFrom(...claimKinds), tricky, fc.constantFrom('statement\n', 'statement\na'));
const claimInput = fc.record({ kind: kindArb, title: tricky, body: tricky });

/** An independent reimplementation of the id: SHA-256 over the concatenated UTF-8 byte strings. */
function independentId(c: { kind: string; title: string; body: string }): string {
  const nl = Buffer.from([0x0a]);
  const parts = [Buffer.from('x.claim/1', 'ascii'), nl, Buffer.from(c.kind, 'utf8'), nl, Buffer.from(c.title, 'utf8'), nl, Buffer.from(c.body, 'utf8')];
  return createHash('sha256').update(Buffer.concat(parts)).digest('hex');
}

describe('claim ids', () => {
  it('ids of valid claims match an independent SHA-256 computation', () => {
    fc.assert(
      fc.property(fc.record({ kind: fc.constantFrom(...claimKinds), title: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), body: fc.string({ unit: 'grapheme', maxLength: 200 }) }), (input) => {
        const result = validateClaim(input);
        if (!result.ok) {
          expect(/[\n\r]/.test(input.title)).toBe(true);
          return;
        }
        expect(claimId(result.value)).toBe(independentId(result.value));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('distinct valid claims never share an id (the hashed text is injective on valid claims)', () => {
    fc.assert(
      fc.property(claimInput, claimInput, (a, b) => {
        const va = validateClaim(a);
        const vb = validateClaim(b);
        if (!va.ok || !vb.ok) return;
        const same = va.value.kind === vb.value.kind && va.value.title === vb.value.title && va.value.body === vb.value.body;
        expect(claimId(va.value) === claimId(vb.value)).toBe(same);
      }),
      { numRuns: NUM_RUNS * 5 },
    );
  });

  it('a line break in kind or title, or a lone surrogate anywhere, is refused', () => {
    fc.assert(
      fc.property(claimInput, (input) => {
        const result = validateClaim(input);
        const loneSurrogate = (s: string) => Buffer.from(s, 'utf8').toString('utf8') !== s;
        const bad = /[\n\r]/.test(input.kind) || /[\n\r]/.test(input.title) || [input.kind, input.title, input.body].some(loneSurrogate);
        if (bad) expect(result.ok).toBe(false);
        if (result.ok) expect((claimKinds as readonly string[]).includes(input.kind)).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('without the newline rule two different claims would share an id (why the rule exists)', () => {
    const a = { kind: 'statement', title: 'boots\nfast', body: 'on rp2040' };
    const b = { kind: 'statement', title: 'boots', body: 'fast\non rp2040' };
    expect(claimId(a)).toBe(claimId(b));
    expect(validateClaim(a).ok).toBe(false);
    expect(validateClaim(b).ok).toBe(true);
    // And a lone surrogate is encoded as U+FFFD, colliding with the real character.
    expect(claimId({ kind: 'statement', title: 't', body: '\ud800' })).toBe(claimId({ kind: 'statement', title: 't', body: '\ufffd' }));
  });
});

describe('canonical JSON', () => {
  it('round-trips JSON values and is insensitive to key order and re-serialisation', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        // JSON has no -0; canonical form writes 0, so compare after one JSON round trip.
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        const reversed = JSON.parse(JSON.stringify(value), (_key, v: unknown) =>
          v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
        ) as unknown;
        expect(canonicalJson(reversed)).toBe(text);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
