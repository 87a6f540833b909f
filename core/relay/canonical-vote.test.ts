import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';
import { canonicalVoteText } from './canonical-vote.js';
import { generateNodeKey } from './node-id.js';
import { parseVote, signVote, verifyVote, voteSigningBytes } from './vote.js';

/** What `canonicalJson` gives for a vote's signed part (no sig, no hint, top-level undefined absent), or the error it throws. */
function general(vote: Record<string, unknown>): { text: string } | { refused: unknown } {
  const signed = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(vote)) if (key !== 'sig' && key !== 'hint' && vote[key] !== undefined) signed[key] = vote[key];
  try {
    return { text: canonicalJson(signed) };
  } catch (error) {
    return { refused: error };
  }
}

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
/** Quorum sets as parsed (`t`, `v`, `i`, every key present), nested up to the design note's 4 levels. */
const slice: fc.Arbitrary<{ t: number; v: string[]; i: unknown[] }> = fc.letrec((tie) => ({
  level: fc.record({
    t: fc.nat(30),
    v: fc.array(hex64, { maxLength: 6 }),
    i: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.constant([]), fc.array(tie('level'), { maxLength: 3 })),
  }),
})).level as fc.Arbitrary<{ t: number; v: string[]; i: unknown[] }>;
/** Votes as `parseVote` returns them. */
const parsedVote = fc.record(
  {
    schema: fc.constant('x.vote/1'),
    scheme: fc.constant('scp-s5'),
    item: hex64,
    voter: hex64,
    value: fc.constantFrom('yes', 'no'),
    phase: fc.constantFrom('vote', 'accept', 'confirm'),
    slice,
    slice_hash: hex64,
    created_at: fc.maxSafeNat(),
    sig: fc.string(),
    hint: fc.anything(),
  },
  { requiredKeys: ['schema', 'scheme', 'item', 'voter', 'value', 'phase', 'created_at'] },
);
/** Anything a field could hold, including text JSON must escape and values with no JSON form. */
const oddValue = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('"', '\\', '\u0000', '\u007f', '\ud800', 'é', '\u2028', '-0'),
  fc.double(),
  fc.constantFrom(-0, Number.MAX_SAFE_INTEGER + 1, 1.5, NaN, Infinity),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.array(fc.oneof(hex64, fc.string(), fc.integer())),
  fc.dictionary(fc.constantFrom('t', 'v', 'i', 'x', '__proto__'), fc.oneof(fc.integer(), fc.array(hex64), fc.constant(undefined))),
  fc.anything(),
);

describe('canonicalVoteText (the plain vote written out, decision 1160)', () => {
  it('gives exactly the general walk\'s text for every vote as parsed', () => {
    fc.assert(
      fc.property(parsedVote, (vote) => {
        const fast = canonicalVoteText(vote);
        expect(fast).not.toBeNull();
        expect(general(vote)).toEqual({ text: fast });
      }),
      { numRuns: 500 },
    );
  });

  it('answers null, or the general walk\'s text, when a field is replaced, removed or added with anything', () => {
    const keys = ['schema', 'scheme', 'item', 'voter', 'value', 'phase', 'slice', 'slice_hash', 'created_at', 'sig', 'hint', 'extra', '__proto__'];
    fc.assert(
      fc.property(parsedVote, fc.array(fc.tuple(fc.constantFrom(...keys), oddValue), { minLength: 1, maxLength: 3 }), (vote, changes) => {
        const changed: Record<string, unknown> = { ...vote };
        // defineProperty: an own `__proto__` key, as JSON.parse makes one.
        for (const [key, value] of changes) Object.defineProperty(changed, key, { value, enumerable: true, configurable: true, writable: true });
        const fast = canonicalVoteText(changed);
        if (fast !== null) expect(general(changed)).toEqual({ text: fast });
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves to the general walk what JSON must escape, numbers that are not safe integers, and odd slices', () => {
    const base = { schema: 'x.vote/1', scheme: 'scp-s5', item: 'a'.repeat(64), voter: 'b'.repeat(64), value: 'yes', phase: 'vote', slice_hash: 'c'.repeat(64), created_at: 1 };
    expect(general(base)).toEqual({ text: canonicalVoteText(base) });
    expect(canonicalVoteText(base)).not.toBeNull();
    for (const odd of [
      { value: 'y"es' },
      { value: 'y\\es' },
      { value: 'é' },
      { value: '\u0000' },
      { created_at: 1.5 },
      { created_at: 2 ** 53 },
      { created_at: '1' },
      { slice: { t: 1, v: ['a'.repeat(64)], i: [], w: 1 } },
      { slice: { t: 1, v: ['a'.repeat(64), 3] } },
      { slice: { t: 1, v: [, 'a'.repeat(64)] } },
      { extra: 1 },
    ]) {
      expect(canonicalVoteText({ ...base, ...odd })).toBeNull();
    }
    // A slice nested past the general walk's unwatched depth is the general walk's too.
    let deep: Record<string, unknown> = { t: 1, v: [], i: [] };
    for (let k = 0; k < 10; k++) deep = { t: 1, v: [], i: [deep] };
    expect(canonicalVoteText({ ...base, slice: deep })).toBeNull();
  });

  it('is what votes are signed and checked over: a signed vote verifies, a changed one does not', () => {
    const voter = generateNodeKey();
    const validator = generateNodeKey();
    const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: 'd'.repeat(64), voter: voter.nodeId, value: 'yes', phase: 'vote', slice: { t: 1, v: [validator.nodeId], i: [] }, created_at: 1_700_000_000 }, voter.secretKey);
    const parsed = parseVote(JSON.parse(JSON.stringify(vote)));
    if (!parsed.ok) throw new Error('the signed vote did not parse');
    expect(Buffer.from(voteSigningBytes(parsed.value)).toString('utf8')).toBe((general(parsed.value as unknown as Record<string, unknown>) as { text: string }).text);
    expect(verifyVote(parsed.value)).toBe(true);
    expect(verifyVote({ ...parsed.value, created_at: parsed.value.created_at + 1 })).toBe(false);
  });
});
