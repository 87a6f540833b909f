import { afterEach, describe, expect, it } from 'vitest';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type Vote, signVote, verifyVote, voteSigningBytes } from '../../../core/relay/vote.js';
import { ED25519_L } from '../../../core/relay/ed25519.js';
import { SignatureThread } from './signature-thread.js';

const item = 'ab'.repeat(32);
const keys: NodeKey[] = Array.from({ length: 4 }, () => generateNodeKey());
const validator = generateNodeKey();
let thread: SignatureThread | undefined;

afterEach(async () => {
  await thread?.close();
  thread = undefined;
});

function vote(key: NodeKey, createdAt = 1): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: 'yes', phase: 'vote', slice: { t: 1, v: [validator.nodeId], i: [] }, created_at: createdAt }, key.secretKey);
}

async function readyThread(options: { messageMaxBytes?: number } = {}): Promise<SignatureThread> {
  thread = new SignatureThread(options);
  await thread.started();
  return thread;
}

/** The thread's own verdict (waits for it, so the loop's fallback never answers). */
async function threadVerdict(t: SignatureThread, v: Vote): Promise<boolean | null> {
  const check = t.begin(v);
  if (!check) return null;
  // Waits for the thread's answer before asking for the verdict (which would withdraw an ask not yet taken).
  for (;;) {
    await t.idle();
    if (t.answerOf(t.lastSeq) !== undefined) break;
  }
  const answer = t.answerOf(t.lastSeq);
  expect(check.verdict()).toBe(answer);
  return answer ?? null;
}

describe('SignatureThread', () => {
  it('starts at its first ask, taking none until it is ready', async () => {
    thread = new SignatureThread();
    expect(thread.begin(vote(keys[0] as NodeKey))).toBeNull();
    await thread.started();
    expect(thread.ready).toBe(true);
    expect(await threadVerdict(thread, vote(keys[0] as NodeKey))).toBe(true);
  });

  it('agrees with verifyVote on valid, tampered and misattributed votes', async () => {
    const t = await readyThread();
    const cases: Vote[] = [];
    for (const [k, key] of keys.entries()) {
      const good = vote(key, k + 1);
      cases.push(good, { ...good, created_at: good.created_at + 1 }, { ...good, voter: (keys[(k + 1) % keys.length] as NodeKey).nodeId }, { ...good, value: 'no' });
    }
    for (const v of cases) expect(await threadVerdict(t, v)).toBe(verifyVote(v, { keyChecked: true }));
    expect(cases.filter((v) => verifyVote(v, { keyChecked: true }))).toHaveLength(keys.length);
  });

  it('leaves to the loop what verifyVote refuses before any curve arithmetic (the caller checks it there)', async () => {
    const good = vote(keys[0] as NodeKey);
    const signedBytes = voteSigningBytes(good).length;
    const t = await readyThread({ messageMaxBytes: signedBytes });
    // S + L: the same signature re-encoded, which OpenSSL itself would accept.
    const sig = Buffer.from(good.sig, 'base64url');
    let s = 0n;
    for (let k = 63; k >= 32; k--) s = (s << 8n) | BigInt(sig[k] ?? 0);
    s += ED25519_L;
    for (let k = 32; k < 64; k++) {
      sig[k] = Number(s & 0xffn);
      s >>= 8n;
    }
    expect(t.begin({ ...good, sig: sig.toString('base64url') })).toBeNull();
    expect(t.begin({ ...good, sig: 'not a signature' })).toBeNull();
    expect(t.begin({ ...good, voter: 'AB'.repeat(32) })).toBeNull();
    // Signed bytes over the shared area's size (one more digit in created_at).
    expect(t.begin(vote(keys[0] as NodeKey, 10))).toBeNull();
    expect(t.ready).toBe(true);
    expect(t.begin(good)?.verdict()).toBe(true);
  });

  it('takes one ask at a time, answers each rightly, and a verdict withdraws an ask the thread has not taken', async () => {
    const t = await readyThread();
    let taken = 0;
    for (let k = 0; k < 50; k++) {
      const key = keys[k % keys.length] as NodeKey;
      const first = t.begin(vote(key, k + 1));
      const firstSeq = t.lastSeq;
      // Asked again at once: taken only when the thread is idle again, the shared area free.
      const second = t.begin({ ...vote(key, k + 2), value: 'no' });
      // Whichever answers (the thread, or the loop when the thread has not yet), the answer is right.
      expect(first?.verdict() ?? true).toBe(true);
      expect(second?.verdict() ?? false).toBe(false);
      // And the thread's own answer to its last ask, if it gave one (the verdict may have withdrawn
      // an ask it had not taken), is right: an ask written over one being checked would not be.
      await t.idle();
      const answer = t.answerOf(t.lastSeq);
      if (answer !== undefined) expect(answer).toBe(!second && firstSeq === t.lastSeq);
      if (first) taken++;
    }
    // Each round began with the thread idle (`idle` waits for that): every first ask was taken.
    expect(taken).toBe(50);
  });

  it('sends the thread a voter\'s key the loop has parsed, once, and checks with it', async () => {
    const t = await readyThread();
    const key = generateNodeKey();
    const first = vote(key, 1);
    // Parsed on the loop (a check there), not yet by the thread.
    expect(verifyVote(first, { keyChecked: true })).toBe(true);
    expect(await threadVerdict(t, first)).toBe(true);
    expect(await threadVerdict(t, vote(key, 2))).toBe(true);
    expect(t.keysShared).toBe(1);
    // A key the loop never parsed is the thread's to parse: nothing sent.
    expect(await threadVerdict(t, vote(generateNodeKey(), 3))).toBe(true);
    expect(t.keysShared).toBe(1);
  });

  it('ends on close; checks asked after it are null', async () => {
    const t = await readyThread();
    await t.close();
    expect(t.begin(vote(keys[0] as NodeKey))).toBeNull();
    expect(t.ready).toBe(false);
  });
});
