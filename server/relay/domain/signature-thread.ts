import { performance } from 'node:perf_hooks';
import { MessageChannel, type MessagePort, Worker, type WorkerOptions } from 'node:worker_threads';
import { cachedPublicKeyObject, isCanonicalSignature } from '../../../core/relay/ed25519.js';
import { type Vote, signatureCheckOf, verifyVote } from '../../../core/relay/vote.js';

/**
 * A vote's signature check begun off the event loop (`SignatureChecksAhead.begin`). `verdict` waits
 * for the thread at most 0.5 ms, and only for a check the thread has begun; otherwise (the thread
 * has not taken it, is late, or could not check it) the loop checks the signature itself
 * (`verifyVote`), so a check ahead costs the loop about what checking on it always cost at worst
 * (decision 1090). The verdict is right whenever it is read; read before the next `begin`, as
 * `VoteIngest` does, it is the thread's own when the thread answered in time, and read after it,
 * the loop checks (the shared area is the next ask's by then).
 */
export interface AheadCheck {
  /** Whether the signature is valid; the same answer `verifyVote(vote, { keyChecked: true })` gives. Memoised. */
  verdict(): boolean;
}

/** Signature checks begun before the loop stores a vote, read at its commit (decision 1090). */
export interface SignatureChecksAhead {
  /**
   * Begins checking `vote`'s Ed25519 signature off the loop, its voter's key already known good (a
   * registered node's). Null when it cannot go ahead now: the thread is starting, busy or gone, or
   * the vote is one `verifyVote` refuses before any curve arithmetic (the caller then checks it on
   * the loop, as without a thread, and gives the same answer).
   */
  begin(vote: Vote): AheadCheck | null;
  /** Ends the thread (bounded); checks begun after this are null. */
  close(): Promise<void>;
}

/** Signed bytes the thread takes by default (a canonical vote, its slice inline: a 1000-node slice is about 66 KB); larger votes are checked on the loop. */
export const AHEAD_MESSAGE_MAX_BYTES = 256 * 1024;

/** Parsed keys the thread keeps (as `core/relay/ed25519.ts` keeps on the loop). */
const THREAD_KEY_LIMIT = 16_384;

/** The control words (an Int32Array over a SharedArrayBuffer), and the thread's states. */
const STATE = 0;
const SEQ = 1;
/**
 * The last answer: its ask's number times 4 plus its outcome, one word, so that a number is never
 * read with another ask's outcome (two words, written one after the other, could be).
 */
const DONE = 2;
const LENGTH = 3;
/** Keys the thread parsed itself (not sent by the loop); tests read it. */
const PARSED = 4;
const CONTROL_WORDS = 5;
/** The outcomes in `DONE`: forged, valid, or not checked (the thread threw: the loop checks). */
const FORGED = 0;
const VALID = 1;
const UNCHECKED = 2;
/** Ask numbers run 1 .. SEQ_LIMIT and then from 1 again: times 4 plus an outcome, they stay a positive Int32. */
const SEQ_LIMIT = 2 ** 29 - 1;
const STARTING = 0;
const IDLE = 1;
const ASKED = 2;
const BUSY = 3;
const STOPPING = 4;
/** The data area: the public key, the signature, then the signed bytes. */
const KEY_AT = 0;
const SIG_AT = 32;
const MESSAGE_AT = 96;
/** `Atomics.waitAsync` (Node 16 and later; not in this TypeScript target's lib). */
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/**
 * How long the loop waits, at most, for a check the thread has begun: a check costs the loop about
 * 0.15-0.35 ms itself, so a wait past this means the thread lost its core, and the loop checks.
 */
const BUSY_WAIT_MS = 0.5;

/** How long `close` waits for the thread to end before terminating it. */
const STOP_TIMEOUT_MS = 5_000;

/**
 * The thread: a loop blocked in `Atomics.wait` until asked, one `crypto.verify` (OpenSSL) per ask,
 * its outcome and the ask's number stored back in one word. CommonJS text (an eval'd worker runs no
 * TypeScript). It keeps its own parsed key objects (parsing a key costs about as much as a
 * verification). The fence (`isCanonicalSignature`, the key's length) is the loop's, before it asks.
 * Anything that throws here is "not checked", never "forged": the loop then checks the vote itself.
 */
const THREAD_SOURCE = `
const { workerData, receiveMessageOnPort } = require('node:worker_threads');
const { createPublicKey, verify } = require('node:crypto');
const control = new Int32Array(workerData.control);
const data = new Uint8Array(workerData.data);
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const KEY_LIMIT = ${THREAD_KEY_LIMIT};
const keys = new Map();
function remember(id, key) {
  if (keys.size >= KEY_LIMIT) keys.delete(keys.keys().next().value);
  keys.set(id, key);
}
function keyObject(bytes) {
  const id = bytes.toString('hex');
  let key = keys.get(id);
  if (key) return key;
  key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, bytes]), format: 'der', type: 'spki' });
  Atomics.add(control, ${PARSED}, 1);
  remember(id, key);
  return key;
}
// Ready, unless close came first: then it has stored STOPPING, which this must not overwrite.
const stopped = Atomics.compareExchange(control, ${STATE}, ${STARTING}, ${IDLE}) !== ${STARTING};
Atomics.notify(control, ${STATE});
while (!stopped) {
  Atomics.wait(control, ${STATE}, ${IDLE});
  const state = Atomics.load(control, ${STATE});
  if (state === ${STOPPING}) break;
  // Taken only if the loop has not withdrawn it meanwhile: one of the two wins.
  if (state !== ${ASKED} || Atomics.compareExchange(control, ${STATE}, ${ASKED}, ${BUSY}) !== ${ASKED}) continue;
  const seq = Atomics.load(control, ${SEQ});
  const length = Atomics.load(control, ${LENGTH});
  let outcome = ${UNCHECKED};
  try {
    // Keys the loop had parsed already, sent before the ask: taken in, so this check parses none.
    for (let sent = receiveMessageOnPort(workerData.keys); sent; sent = receiveMessageOnPort(workerData.keys)) remember(sent.message.id, sent.message.key);
    // Copied out of the shared memory: OpenSSL reads plain buffers.
    const key = keyObject(Buffer.from(data.subarray(${KEY_AT}, ${KEY_AT} + 32)));
    outcome = verify(null, Buffer.from(data.subarray(${MESSAGE_AT}, ${MESSAGE_AT} + length)), key, Buffer.from(data.subarray(${SIG_AT}, ${SIG_AT} + 64))) ? ${VALID} : ${FORGED};
  } catch {
    // A key object that did not clone, an OpenSSL error: no verdict; the loop checks.
  }
  Atomics.store(control, ${DONE}, seq * 4 + outcome);
  // Back to idle unless close asked it to stop meanwhile.
  Atomics.compareExchange(control, ${STATE}, ${BUSY}, ${IDLE});
  Atomics.notify(control, ${DONE});
  Atomics.notify(control, ${STATE});
}
`;

/**
 * One thread that checks one lone vote's signature at a time while the event loop stores it
 * (decision 1090). Asked through shared memory, not messages: the loop must read the verdict
 * synchronously, inside the transaction, before the commit, and a message's answer would come on a
 * later turn. (Parsed keys do go by message, ahead of an ask: the thread reads them synchronously.) Started at the first `begin` (a relay that is never
 * sent a vote runs no thread); until it is ready, `begin` answers null.
 */
export class SignatureThread implements SignatureChecksAhead {
  private readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * Int32Array.BYTES_PER_ELEMENT));
  private readonly data: Uint8Array;
  private readonly messageMaxBytes: number;
  private readonly onLost: (cause: unknown) => void;
  private readonly startWorker: (source: string, options: WorkerOptions) => Worker;
  private worker: Worker | undefined;
  /** Where the loop sends the thread key objects it has parsed (read by the thread synchronously, when it takes an ask). */
  private keysPort: MessagePort | undefined;
  /**
   * Node ids whose key the thread has, as far as the loop can tell (it sent it, or asked with it and
   * the thread parsed it): a hint, bounded like the thread's cache. Wrong, it costs one parse or one
   * message, never a wrong verdict.
   */
  private readonly threadKeys = new Set<string>();
  private exited: Promise<void> | undefined;
  private seq = 0;
  private gone = false;
  /** Key objects sent to the thread, parsed on the loop before (tests). */
  keysShared = 0;
  /** Whether `close` had to terminate the thread, which did not end when told to (tests). */
  terminated = false;

  /** `startWorker`: how the thread is made (`new Worker`; tests make it throw). */
  constructor(options: { onLost?: (cause: unknown) => void; messageMaxBytes?: number; startWorker?: (source: string, options: WorkerOptions) => Worker } = {}) {
    // Told once if the thread ends by itself, or cannot be started: checks then stay on the loop for good.
    this.onLost = options.onLost ?? (() => {});
    this.startWorker = options.startWorker ?? ((source, workerOptions) => new Worker(source, workerOptions));
    this.messageMaxBytes = options.messageMaxBytes ?? AHEAD_MESSAGE_MAX_BYTES;
    this.data = new Uint8Array(new SharedArrayBuffer(MESSAGE_AT + this.messageMaxBytes));
  }

  begin(vote: Vote): AheadCheck | null {
    if (this.gone) return null;
    if (!this.worker) {
      this.start();
      return null;
    }
    if (Atomics.load(this.control, STATE) !== IDLE) return null;
    // verifyVote's fence: what fails it is refused without a thread, by the caller's check on the loop.
    const check = signatureCheckOf(vote);
    if (!check || !isCanonicalSignature(check.sig)) return null;
    const { message } = check;
    if (message.length > this.messageMaxBytes) return null;
    this.shareKey(check.publicKeyHex);
    this.data.set(check.publicKey, KEY_AT);
    this.data.set(check.sig, SIG_AT);
    this.data.set(message, MESSAGE_AT);
    const seq = (this.seq = this.seq >= SEQ_LIMIT ? 1 : this.seq + 1);
    Atomics.store(this.control, LENGTH, message.length);
    Atomics.store(this.control, SEQ, seq);
    Atomics.store(this.control, STATE, ASKED);
    Atomics.notify(this.control, STATE);
    let verdict: boolean | undefined;
    return {
      verdict: () => (verdict ??= this.verdictOf(seq, vote)),
    };
  }

  /**
   * The thread's answer; when it has none yet: an ask it has not taken is withdrawn and checked
   * here, and one it is checking is waited for (at most `BUSY_WAIT_MS`, less than a check costs
   * the loop), so the check is never made twice over (a loaded 2-core machine often left the
   * thread unscheduled for a while, and the loop then checked what the thread was checking too).
   * When a later ask was made since (SEQ is the loop's alone to write, so this is no race), the
   * thread is done with this one and its answer, if not still in `DONE`, is gone: checked here,
   * and the later ask is neither withdrawn nor waited for. No answer, or "not checked": checked here.
   */
  private verdictOf(seq: number, vote: Vote): boolean {
    let answer = this.answerOf(seq);
    if (answer === undefined && Atomics.load(this.control, SEQ) === seq) answer = Atomics.compareExchange(this.control, STATE, ASKED, IDLE) === ASKED ? undefined : this.waitForAnswer(seq);
    return answer ?? verifyVote(vote, { keyChecked: true });
  }

  /** Blocks the loop until the thread answers ask `seq`, at most `BUSY_WAIT_MS`; undefined (or null, "not checked") when it did not. */
  private waitForAnswer(seq: number): boolean | null | undefined {
    const deadline = performance.now() + BUSY_WAIT_MS;
    for (;;) {
      const done = Atomics.load(this.control, DONE);
      const answer = answerIn(done, seq);
      if (answer !== undefined) return answer;
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      Atomics.wait(this.control, DONE, done, left);
    }
  }

  /**
   * Sends the thread the voter's key object when the loop has it parsed and the thread may not: a
   * key parse costs about 0.16 ms here, as much as a check, and a voter's first lone vote would
   * otherwise make the thread slower than the transaction it runs beside.
   */
  private shareKey(nodeId: string): void {
    if (this.threadKeys.has(nodeId)) return;
    const key = cachedPublicKeyObject(nodeId);
    if (key && this.keysPort) {
      this.keysPort.postMessage({ id: nodeId, key });
      this.keysShared++;
    }
    if (this.threadKeys.size >= THREAD_KEY_LIMIT) this.threadKeys.delete(this.threadKeys.values().next().value as string);
    this.threadKeys.add(nodeId);
  }

  /** The thread's verdict for ask `seq`: undefined while it has not given one, null when it could not check (it threw). */
  answerOf(seq: number): boolean | null | undefined {
    return answerIn(Atomics.load(this.control, DONE), seq);
  }

  /** Keys the thread parsed itself, not taken from the loop (tests). */
  get threadKeyParses(): number {
    return Atomics.load(this.control, PARSED);
  }

  /** The number of the last ask (tests). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Whether the thread is started and waiting for an ask (tests wait for it before asking). */
  get ready(): boolean {
    return !this.gone && this.worker !== undefined && Atomics.load(this.control, STATE) === IDLE;
  }

  /** Starts the thread now (`begin` does at its first call); settles once it waits for asks. */
  async started(): Promise<void> {
    if (this.gone) return;
    if (!this.worker) this.start();
    if (this.gone) return;
    const waited = waitAsync(this.control, STATE, STARTING);
    if (waited.async) await waited.value;
  }

  /** Settles once the thread is done with every ask (answered, or withdrawn by the loop) and waits for the next (tests). */
  async idle(): Promise<void> {
    for (;;) {
      const state = Atomics.load(this.control, STATE);
      if (state !== ASKED && state !== BUSY) return;
      const waited = waitAsync(this.control, STATE, state);
      if (waited.async) await waited.value;
    }
  }

  async close(): Promise<void> {
    this.gone = true;
    const worker = this.worker;
    if (!worker) return;
    Atomics.store(this.control, STATE, STOPPING);
    Atomics.notify(this.control, STATE);
    this.keysPort?.close();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS)));
    if ((await Promise.race([this.exited, late])) === 'late') {
      this.terminated = true;
      await worker.terminate();
    }
    clearTimeout(timer);
  }

  private start(): void {
    let reported = false;
    const lost = (cause: unknown) => {
      if (this.gone || reported) return;
      reported = true;
      this.gone = true;
      this.onLost(cause);
    };
    const { port1, port2 } = new MessageChannel();
    let worker: Worker;
    try {
      worker = this.startWorker(THREAD_SOURCE, { eval: true, workerData: { control: this.control.buffer, data: this.data.buffer, keys: port2 }, transferList: [port2] });
    } catch (error) {
      // Not a failed vote: it, and every later one, is checked on the loop (`begin` answers null).
      port1.close();
      lost(error);
      return;
    }
    this.keysPort = port1;
    // Unreferenced like the thread: a port waiting for nothing must not keep a finished process alive.
    port1.unref();
    // The thread keeps no process alive: `close` ends it, and a process that is done must be able to exit.
    worker.unref();
    this.worker = worker;
    worker.on('error', lost);
    this.exited = new Promise((resolve) =>
      worker.on('exit', (code) => {
        lost(new Error(`the relay's signature thread ended (exit code ${code})`));
        resolve();
      }),
    );
  }
}

/** The answer `done` (a `DONE` word) holds for ask `seq`: undefined when it is another ask's, null when the thread could not check. */
function answerIn(done: number, seq: number): boolean | null | undefined {
  if (done >>> 2 !== seq) return undefined;
  const outcome = done & 3;
  return outcome === VALID ? true : outcome === FORGED ? false : null;
}
