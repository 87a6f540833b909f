import { afterEach, describe, expect, it } from 'vitest';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type Vote, signVote, verifyVote, voteSigningBytes } from '../../../core/relay/vote.js';
import { ED25519_L } from '../../../core/relay/ed25519.js';
import { Worker } from 'node:worker_threads';
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
  // Null: the thread could not check it, and the verdict is the loop's own check.
  expect(check.verdict()).toBe(answer ?? verifyVote(v, { keyChecked: true }));
  return answer ?? null;
}

/**
 * A stand-in for the thread that becomes ready and then never takes an ask (it ends when closed):
 * the test plays the thread by writing the control words, so every interleaving is chosen, not hoped for.
 */
const STAND_IN = `
const { workerData } = require('node:worker_threads');
const control = new Int32Array(workerData.control);
Atomics.compareExchange(control, 0, 0, 1);
Atomics.notify(control, 0);
for (let state = Atomics.load(control, 0); state !== 4; state = Atomics.load(control, 0)) Atomics.wait(control, 0, state);
`;
/** The control words, as `signature-thread.ts` lays them out. */
const STATE = 0;
const DONE = 2;
const IDLE = 1;
const ASKED = 2;
const BUSY = 3;

async function standInThread(): Promise<{ t: SignatureThread; control: Int32Array; data: Uint8Array }> {
  const t = new SignatureThread({ startWorker: (_source, options) => new Worker(STAND_IN, options) });
  thread = t;
  await t.started();
  const inside = t as unknown as { control: Int32Array; data: Uint8Array };
  return { t, control: inside.control, data: inside.data };
}

/** Plays the thread answering ask `seq`: its outcome (0 forged, 1 valid, 2 not checked) and the ask's number in one word, then idle. */
function answerAs(control: Int32Array, seq: number, outcome: 0 | 1 | 2): void {
  Atomics.store(control, DONE, seq * 4 + outcome);
  Atomics.store(control, STATE, IDLE);
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

  it('answers each of two asks made at once rightly, whichever of the thread and the loop answers', async () => {
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
      // an ask it had not taken), is right. (That the loop never writes over an ask being checked
      // is shown without races below, with a stand-in thread.)
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
    // The thread checked with the key it was sent: it parsed none itself.
    expect(t.threadKeyParses).toBe(0);
    // A key the loop never parsed is the thread's to parse: nothing sent.
    expect(await threadVerdict(t, vote(generateNodeKey(), 3))).toBe(true);
    expect(t.keysShared).toBe(1);
    expect(t.threadKeyParses).toBe(1);
  });

  it('writes no ask while one is asked or being checked: the shared area and the ask number stay as they are', async () => {
    const { t, control, data } = await standInThread();
    const first = t.begin(vote(keys[0] as NodeKey, 1));
    expect(first).not.toBeNull();
    const asked = t.lastSeq;
    const area = Buffer.from(data);
    for (const state of [ASKED, BUSY]) {
      Atomics.store(control, STATE, state);
      expect(t.begin({ ...vote(keys[1] as NodeKey, 2), value: 'no' })).toBeNull();
      expect(t.lastSeq).toBe(asked);
      expect(Buffer.from(data).equals(area)).toBe(true);
    }
    answerAs(control, asked, 1);
    expect(first?.verdict()).toBe(true);
  });

  it("a verdict read after the next ask neither withdraws that ask nor takes another ask's answer", async () => {
    const { t, control } = await standInThread();
    const forged = t.begin({ ...vote(keys[0] as NodeKey, 1), value: 'no' });
    answerAs(control, t.lastSeq, 0);
    const between = t.begin(vote(keys[0] as NodeKey, 2));
    answerAs(control, t.lastSeq, 1);
    const genuine = t.begin(vote(keys[0] as NodeKey, 3));
    // Read late: the thread's word is the middle ask's, and the last ask is waiting to be taken.
    expect(forged?.verdict()).toBe(false);
    expect(Atomics.load(control, STATE)).toBe(ASKED);
    expect(between?.verdict()).toBe(true);
    expect(Atomics.load(control, STATE)).toBe(ASKED);
    // Taken and answered by the thread: that answer is the verdict.
    Atomics.store(control, STATE, BUSY);
    answerAs(control, t.lastSeq, 1);
    expect(genuine?.verdict()).toBe(true);
  });

  it('still reads the thread\'s answers once the ask numbers pass 2^31', async () => {
    const t = await readyThread();
    (t as unknown as { seq: number }).seq = 2 ** 31 - 2;
    for (let k = 0; k < 4; k++) {
      const check = t.begin(vote(keys[k] as NodeKey, k + 1));
      expect(check).not.toBeNull();
      await t.idle();
      expect(t.answerOf(t.lastSeq)).toBe(true);
      expect(check?.verdict()).toBe(true);
    }
  });

  it('does not count a check the thread could not make as forged: the loop checks it', async () => {
    const t = await readyThread();
    // A voter whose key the loop never parsed, so the loop sends none after this one.
    const key = generateNodeKey();
    // A "key" the thread's verify throws on, as a key object that did not clone would.
    (t as unknown as { keysPort: { postMessage(message: unknown): void } }).keysPort.postMessage({ id: key.nodeId, key: 'not a key' });
    const check = t.begin(vote(key, 7));
    expect(check).not.toBeNull();
    await t.idle();
    expect(t.answerOf(t.lastSeq)).toBeNull();
    expect(check?.verdict()).toBe(true);
  });

  it('answers null, and reports the thread lost once, when the thread cannot be started', async () => {
    const lost: unknown[] = [];
    let tries = 0;
    thread = new SignatureThread({
      onLost: (cause) => lost.push(cause),
      startWorker: () => {
        tries++;
        throw new Error('no threads here');
      },
    });
    expect(thread.begin(vote(keys[0] as NodeKey))).toBeNull();
    expect(thread.begin(vote(keys[0] as NodeKey, 2))).toBeNull();
    await thread.started();
    expect(tries).toBe(1);
    expect(lost).toHaveLength(1);
    expect(thread.ready).toBe(false);
  });

  it('reports a thread that ended by itself once, and checks nothing ahead after it', async () => {
    let reported!: () => void;
    const lostOnce = new Promise<void>((resolve) => (reported = resolve));
    const lost: unknown[] = [];
    thread = new SignatureThread({
      onLost: (cause) => {
        lost.push(cause);
        reported();
      },
    });
    await thread.started();
    await (thread as unknown as { worker: Worker }).worker.terminate();
    await lostOnce;
    expect(thread.begin(vote(keys[0] as NodeKey))).toBeNull();
    expect(lost).toHaveLength(1);
    expect(thread.ready).toBe(false);
  });

  it('ends by itself when closed while it is still starting (not at the stop timeout)', async () => {
    const t = new SignatureThread();
    thread = t;
    expect(t.begin(vote(keys[0] as NodeKey))).toBeNull();
    await t.close();
    expect(t.terminated).toBe(false);
  }, 20_000);

  it('ends on close; checks asked after it are null', async () => {
    const t = await readyThread();
    await t.close();
    expect(t.begin(vote(keys[0] as NodeKey))).toBeNull();
    expect(t.ready).toBe(false);
  });
});
