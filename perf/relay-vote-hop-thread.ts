import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { type Vote, parseVote, verifyVote } from '../core/relay/vote.js';

/**
 * The thread of perf/relay-vote-hop.ts: takes a vote's body (bytes or text), does the vote's
 * simulated work (a spin of `workUs`) or its CPU-only work (`check`: `JSON.parse`, `parseVote`,
 * `verifyVote`), and answers small, with when the message arrived and when the answer left
 * (`performance.timeOrigin`-based ms, comparable across threads).
 */
export interface HopMessage {
  id: number;
  /** The body's bytes or text; or, in `hop-parsed`, the vote already parsed on the loop. */
  body: string | Uint8Array | Vote;
  check: boolean;
  /** Answer together with the other votes this thread took in the same turn (`hop-batch`). */
  batch?: boolean;
}

const port = parentPort;
if (!port) throw new Error('relay-vote-hop-thread.ts is the entry of a worker thread');
const workMs = (workerData as { workUs: number }).workUs / 1000;
port.on('message', (m: HopMessage) => {
  const arrivedMs = performance.timeOrigin + performance.now();
  if (!(typeof m.body === 'string' || m.body instanceof Uint8Array)) {
    // 0770's shape: a parsed vote in, the outcome as an object out (the loop then serialises it).
    spinMs(workMs);
    port.postMessage({ id: m.id, status: 201, answer: outcomeOf(m.body), arrivedMs, sentMs: performance.timeOrigin + performance.now() });
    return;
  }
  const text = typeof m.body === 'string' ? m.body : Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength).toString('utf8');
  let body = '{"stored":true}';
  if (m.check) {
    const parsed = parseVote(JSON.parse(text));
    if (!parsed.ok || !verifyVote(parsed.value, { keyChecked: true })) body = '{"detail":"refused"}';
  } else spinMs(workMs);
  const answer = { id: m.id, status: 201, body, arrivedMs, sentMs: 0 };
  if (!m.batch) {
    answer.sentMs = performance.timeOrigin + performance.now();
    port.postMessage(answer);
    return;
  }
  // The messages already queued are delivered before an immediate: their answers go in one message.
  held.push(answer);
  if (held.length === 1) setImmediate(flushHeld);
});

const held: { id: number; status: number; body: string; arrivedMs: number; sentMs: number }[] = [];

function flushHeld(): void {
  const sentMs = performance.timeOrigin + performance.now();
  for (const answer of held) answer.sentMs = sentMs;
  port?.postMessage(held.splice(0));
}

function spinMs(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** An outcome shaped like the vote route's (`VoteOutcome` with the relay node's bulletin), for `hop-parsed`. */
function outcomeOf(vote: Vote): unknown {
  return {
    vote,
    stored: true,
    duplicate: false,
    equivocation: false,
    emitted: [],
    bulletin: { item: vote.item, yes: 12, no: 3, accepted: null, confirmed: null, phase: 'voting', relay_node: vote.voter, quorum: false, blocking: false, sliceChangers: [] },
  };
}
