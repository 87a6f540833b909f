import { describe, expect, it } from 'vitest';
import { claimId } from './claim.js';
import { RelayError } from './problem.js';
import { generateNodeKey } from './node-id.js';
import { type UnsignedVote, parseVote, signVote, verifyVote, verifyVoteAsync, voteSigningBytes } from './vote.js';

const voter = generateNodeKey();
const other = generateNodeKey();
const item = claimId({ kind: 'statement', title: 'boots', body: '' });
const unsigned: UnsignedVote = {
  schema: 'x.vote/1',
  scheme: 'scp-s5',
  item,
  voter: voter.nodeId,
  value: 'yes',
  phase: 'vote',
  slice: { t: 1, v: [other.nodeId], i: [] },
  created_at: 1_763_600_000,
  hint: { relay: 'a' },
};

describe('voteSigningBytes', () => {
  it('is the canonical JSON without sig and hint', () => {
    const text = new TextDecoder().decode(voteSigningBytes({ ...unsigned, sig: 'x' } as never));
    expect(text).toBe(
      `{"created_at":1763600000,"item":"${item}","phase":"vote","schema":"x.vote/1","scheme":"scp-s5",` +
        `"slice":{"i":[],"t":1,"v":["${other.nodeId}"]},"value":"yes","voter":"${voter.nodeId}"}`,
    );
  });
});

describe('signVote and verifyVote', () => {
  const vote = signVote(unsigned, voter.secretKey);
  it('signs with unpadded base64url that verifies', () => {
    expect(vote.sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(verifyVote(vote)).toBe(true);
  });
  it('survives key reordering, JSON round trips and hint changes', () => {
    const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(vote).reverse()), null, 2)) as unknown;
    const parsed = parseVote({ ...(reordered as object), hint: ['anything', 1] });
    expect(parsed.ok && verifyVote(parsed.value)).toBe(true);
    const { hint: _hint, ...withoutHint } = vote;
    expect(verifyVote(withoutHint)).toBe(true);
  });
  it('fails when a signed field changes or the voter is someone else', () => {
    expect(verifyVote({ ...vote, value: 'no' })).toBe(false);
    expect(verifyVote({ ...vote, created_at: vote.created_at + 1 })).toBe(false);
    expect(verifyVote({ ...vote, voter: other.nodeId })).toBe(false);
    expect(verifyVote({ ...vote, voter: '00'.repeat(32) })).toBe(false);
    expect(verifyVote({ ...vote, voter: 'not hex' })).toBe(false);
  });
  it('gives the same answers on the thread pool (verifyVoteAsync), the key found by the voter id', async () => {
    const cases = [
      vote,
      { ...vote, value: 'no' as const },
      { ...vote, created_at: vote.created_at + 1 },
      // Checked after the voter's own key was cached under its id: another id is another key.
      { ...vote, voter: other.nodeId },
      { ...vote, voter: '00'.repeat(32) },
      { ...vote, voter: 'not hex' },
      { ...vote, sig: `${vote.sig.slice(0, 85)}B` },
    ];
    for (const options of [{}, { keyChecked: true }]) {
      const answers = await Promise.all(cases.map((c) => verifyVoteAsync(c, options)));
      expect(answers).toEqual(cases.map((c) => verifyVote(c, options)));
      expect(answers[0]).toBe(true);
      expect(answers.slice(1)).not.toContain(true);
    }
    // The other node's own vote verifies under its id after the first was checked under the same signature.
    expect(await verifyVoteAsync(signVote({ ...unsigned, voter: other.nodeId, slice: { t: 1, v: [voter.nodeId], i: [] } }, other.secretKey))).toBe(true);
  });
  it('refuses to sign for another voter or a malformed document', () => {
    expect(() => signVote(unsigned, other.secretKey)).toThrow(RelayError);
    expect(() => signVote({ ...unsigned, phase: 'maybe' as never }, voter.secretKey)).toThrow(/phase/);
  });
});

describe('parseVote', () => {
  const vote = signVote(unsigned, voter.secretKey);
  const problemCodes = (input: unknown) => {
    const result = parseVote(input);
    return result.ok ? [] : result.problems.map((p) => [p.path.join('.'), p.code]);
  };
  it('accepts a signed vote with slice or slice_hash', () => {
    expect(parseVote(vote)).toEqual({ ok: true, value: vote });
    const { slice: _slice, ...rest } = vote;
    expect(parseVote({ ...rest, slice_hash: 'ab'.repeat(32) }).ok).toBe(true);
  });
  it('names each bad field', () => {
    expect(problemCodes({ ...vote, schema: 'x.vote/2' })).toEqual([['schema', 'not_one_of']]);
    expect(problemCodes({ ...vote, value: 'maybe' })).toEqual([['value', 'not_one_of']]);
    expect(problemCodes({ ...vote, item: 'AB'.repeat(32) })).toEqual([['item', 'pattern_mismatch']]);
    expect(problemCodes({ ...vote, created_at: 1.5 })).toEqual([['created_at', 'not_integer']]);
    expect(problemCodes({ ...vote, created_at: -1 })).toEqual([['created_at', 'below_minimum']]);
    expect(problemCodes({ ...vote, sig: `${vote.sig}=` })).toEqual([['sig', 'signature_text']]);
    expect(problemCodes({ ...vote, extra: 1 })).toEqual([['extra', 'extra']]);
    expect(problemCodes({ ...vote, slice_hash: 'ab'.repeat(32) })).toEqual([['slice_hash', 'slice_and_slice_hash']]);
    expect(problemCodes({ ...vote, slice: { t: 1, v: [voter.nodeId], i: [] } })).toEqual([['slice.v.0', 'self_in_slice']]);
    expect(problemCodes({ ...vote, slice: { t: 3, v: [other.nodeId], i: [] } })).toEqual([['slice.t', 'threshold_range']]);
    const { sig: _sig, slice: _slice, ...bare } = vote;
    expect(problemCodes(bare)).toEqual([
      ['sig', 'missing'],
      ['slice', 'missing'],
    ]);
    expect(problemCodes('vote')).toEqual([['', 'not_object']]);
  });
  it('takes a hint nested 32 deep and refuses one nested deeper (a relay serialises what it stores)', () => {
    const vote = signVote(unsigned, voter.secretKey);
    const nested = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));
    expect(parseVote({ ...vote, hint: nested(32) }).ok).toBe(true);
    expect(parseVote({ ...vote, hint: { a: [{ b: 'x' }] } }).ok).toBe(true);
    for (const hint of [nested(33), nested(100_000), { a: nested(32) }]) {
      const parsed = parseVote({ ...vote, hint });
      expect(parsed.ok).toBe(false);
      expect(!parsed.ok && parsed.problems).toEqual([{ path: ['hint'], code: 'hint_too_deep', limit: 32 }]);
    }
  });

  it('takes a hint of 4096 bytes of JSON and refuses a longer one (whoever sends a vote first decides what every relay keeps)', () => {
    const vote = signVote(unsigned, voter.secretKey);
    const text = (bytes: number): string => 'é'.repeat((bytes - 2) / 2); // two UTF-8 bytes each, plus the quotes
    expect(parseVote({ ...vote, hint: text(4096) }).ok).toBe(true);
    for (const hint of [text(4098), ['x'.repeat(5000)], { note: 'x'.repeat(400_000) }]) {
      const parsed = parseVote({ ...vote, hint });
      expect(parsed.ok).toBe(false);
      expect(!parsed.ok && parsed.problems).toEqual([{ path: ['hint'], code: 'hint_too_big', limit: 4096 }]);
    }
  });

  it('refuses signature spellings a lenient base64 decoder would accept', () => {
    // The last character carries 4 unused bits: only A, Q, g, w leave them zero.
    const last = vote.sig.at(-1) as string;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) + 1] as string;
    expect(Buffer.from(vote.sig.slice(0, -1) + sibling, 'base64url')).toEqual(Buffer.from(vote.sig, 'base64url'));
    expect(problemCodes({ ...vote, sig: vote.sig.slice(0, -1) + sibling })).toEqual([['sig', 'signature_text']]);
    expect(verifyVote({ ...vote, sig: vote.sig.slice(0, -1) + sibling })).toBe(false);
  });
});

describe('signVote on documents with undefined optional fields', () => {
  it('signs the parsed document, so an explicit undefined slice_hash changes nothing', () => {
    const vote = signVote({ ...unsigned, slice_hash: undefined }, voter.secretKey);
    expect('slice_hash' in vote).toBe(false);
    expect(verifyVote(vote)).toBe(true);
    expect(vote.sig).toBe(signVote(unsigned, voter.secretKey).sig);
    expect(verifyVote({ ...vote, slice_hash: undefined })).toBe(true);
  });
});
