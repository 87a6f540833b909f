import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type UnsignedVote, type Vote, parseVote, signVote, verifyVote, votePhases, voteValues } from '../../core/relay/vote.js';
import { generateNodeKey } from '../../core/relay/node-id.js';

/**
 * Property 11: any change to a signed field or any bit of `sig` fails; `hint` changes pass. Real
 * Ed25519 keys and signatures: one run signs once and verifies a handful of times (~0.3 ms), so 200
 * runs per property cost well under a second.
 */
const NUM_RUNS = 200;
const keys = Array.from({ length: 3 }, () => generateNodeKey());
const hex64 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));

const unsignedVoteArb: fc.Arbitrary<{ unsigned: UnsignedVote; key: number }> = fc
  .record({
    key: fc.integer({ min: 0, max: keys.length - 1 }),
    item: hex64,
    value: fc.constantFrom(...voteValues),
    phase: fc.constantFrom(...votePhases),
    created_at: fc.integer({ min: 0, max: 2 ** 40 }),
    sliceT: fc.integer({ min: 1, max: 2 }),
    useHash: fc.boolean(),
    sliceHash: hex64,
    hint: fc.option(fc.jsonValue(), { nil: undefined }),
  })
  .map((r) => {
    const voter = keys[r.key]?.nodeId as string;
    const others = keys.filter((k) => k.nodeId !== voter).map((k) => k.nodeId);
    const unsigned: UnsignedVote = {
      schema: 'x.vote/1',
      scheme: 'scp-s5',
      item: r.item,
      voter,
      value: r.value,
      phase: r.phase,
      ...(r.useHash ? { slice_hash: r.sliceHash } : { slice: { t: r.sliceT, v: others, i: [] } }),
      created_at: r.created_at,
      ...(r.hint === undefined ? {} : { hint: r.hint }),
    };
    return { unsigned, key: r.key };
  });

const signed = unsignedVoteArb.map(({ unsigned, key }) => signVote(unsigned, keys[key]?.secretKey as Uint8Array));

/** Every way to change one signed field to a different value that is still well-typed. */
function mutations(vote: Vote): Array<[string, Vote]> {
  const flipHex = (s: string) => (s[0] === '0' ? '1' : '0') + s.slice(1);
  const otherVoter = keys.find((k) => k.nodeId !== vote.voter)?.nodeId as string;
  const out: Array<[string, Vote]> = [
    ['item', { ...vote, item: flipHex(vote.item) }],
    ['voter', { ...vote, voter: otherVoter }],
    ['value', { ...vote, value: vote.value === 'yes' ? 'no' : 'yes' }],
    ['phase', { ...vote, phase: vote.phase === 'vote' ? 'accept' : 'vote' }],
    ['created_at', { ...vote, created_at: vote.created_at + 1 }],
    ['schema', { ...vote, schema: 'x.vote/2' as never }],
    ['scheme', { ...vote, scheme: 'scp-s6' as never }],
    ['extra field', { ...vote, extra: 1 } as Vote],
  ];
  if (vote.slice) {
    out.push(['slice.t', { ...vote, slice: { ...vote.slice, t: vote.slice.t === 1 ? 2 : 1 } }]);
    out.push(['slice.v', { ...vote, slice: { ...vote.slice, v: vote.slice.v.slice(1) } }]);
    const { slice: _slice, ...rest } = vote;
    out.push(['slice -> slice_hash', { ...rest, slice_hash: '0'.repeat(64) }]);
  } else {
    out.push(['slice_hash', { ...vote, slice_hash: flipHex(vote.slice_hash as string) }]);
  }
  return out;
}

describe('vote signatures (design note scp-s5, property 11)', () => {
  it('11. a signed vote verifies; changing any signed field breaks it', () => {
    fc.assert(
      fc.property(signed, (vote) => {
        expect(verifyVote(vote)).toBe(true);
        for (const [field, mutated] of mutations(vote)) {
          expect(verifyVote(mutated), `changed ${field}`).toBe(false);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('11. flipping any bit of sig breaks it, and so does any other spelling of sig', () => {
    fc.assert(
      fc.property(signed, fc.integer({ min: 0, max: 511 }), fc.integer({ min: 0, max: 85 }), fc.integer({ min: 1, max: 63 }), (vote, bit, position, shift) => {
        const bytes = Buffer.from(vote.sig, 'base64url');
        bytes[bit >> 3] = (bytes[bit >> 3] as number) ^ (1 << (bit & 7));
        expect(verifyVote({ ...vote, sig: bytes.toString('base64url') })).toBe(false);
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        const char = vote.sig[position] as string;
        const replaced = alphabet[(alphabet.indexOf(char) + shift) % 64] as string;
        const respelled = vote.sig.slice(0, position) + replaced + vote.sig.slice(position + 1);
        expect(verifyVote({ ...vote, sig: respelled })).toBe(false);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('11. changing, adding or removing hint, reordering keys and re-serialising keep it valid', () => {
    fc.assert(
      fc.property(signed, fc.jsonValue(), (vote, hint) => {
        expect(verifyVote({ ...vote, hint })).toBe(true);
        const { hint: _hint, ...noHint } = vote;
        expect(verifyVote(noHint)).toBe(true);
        const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries({ ...vote, hint }).reverse()), null, 1)) as unknown;
        const parsed = parseVote(reordered);
        expect(parsed.ok && verifyVote(parsed.value)).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
