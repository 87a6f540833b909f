import { parentPort } from 'node:worker_threads';
import { nodeKeyFromSecret } from '../../../core/relay/node-id.js';
import { RelayStore } from '../relay-store.js';
import { refuseUnstorableText } from '../domain/storable-text.js';
import { VoteIngest } from '../domain/vote-ingest.js';
import { Voting } from '../domain/voting.js';
import { type HostToWriter, type VoteAnswer, type WriterThreadData, type WriterToHost, sendableError } from '../domain/vote-writer-protocol.js';
import { type VoteWritePath, checkAndStoreVote } from '../use-cases/post-vote.js';
import { voteAnswerView } from '../views/item-view.js';

/**
 * The vote writer thread's entry (decision 0921, after 0770). For each SQLite relay of the process
 * it opens its own connection to the relay's database and its own `Voting` (slice book, statement
 * log, the relay node's tally, with their caches), and runs POST /items/{id}/vote from the body's
 * bytes as the event loop ran it: the text decoded and parsed as `plainJsonBody` does, checked for
 * U+0000 and lone surrogates where the route wrapper does, then `checkAndStoreVote` (the same
 * checks in the same order, `VoteIngest`'s group commit), and the answer's JSON text. Answers go
 * back one message per turn of this thread's loop, with the items the commits changed. This
 * connection does not sync: it counts its commits where the event loop's store sees them, and
 * every answer waits for that store's sync after them (decision 0480). The event loop's writes
 * reach this thread's caches through `PRAGMA data_version`, read inside each write transaction.
 */
const port = parentPort;
if (!port) throw new Error('post-vote-thread.ts is the entry of a worker thread, not a module to import');
const post = (message: WriterToHost) => port.postMessage(message);

/** One relay's write path here, its node id, and the host clock's time as of its latest vote (the thread has no clock). */
interface Writer extends VoteWritePath {
  id: number;
  selfNodeId: string;
  time: { nowMs: number };
  /** Answers not yet sent, and the items their commits changed. */
  answers: VoteAnswer[];
  changed: Set<string>;
}

const writers = new Map<number, Writer>();
/** What each writer was opened with: a store that failed to open is opened again at its next vote. */
const opened = new Map<number, WriterThreadData>();
/** Writers with answers to send at the end of this turn. */
const toSend = new Set<Writer>();

function openWriter(id: number, data: WriterThreadData): Writer {
  const store = new RelayStore(data.database.dataDir, undefined, { commitsSyncedBy: data.database.commitNotices });
  const selfKey = nodeKeyFromSecret(data.selfSecretKey);
  const time = { nowMs: 0 };
  const clock = {
    nowMs: () => time.nowMs,
    setTimeout: () => {
      throw new Error('the vote writer thread has no timers');
    },
    clearTimeout: () => {},
  };
  const voting = new Voting({ store, clock, selfKey, defaultSliceFrom: data.defaultSliceFrom, ...(data.selfSlice ? { selfSlice: data.selfSlice } : {}) });
  const ingest = new VoteIngest(store, voting, selfKey.nodeId, clock.nowMs, { onThread: true });
  return { id, store, voting, ingest, selfNodeId: selfKey.nodeId, time, answers: [], changed: new Set() };
}

function writerOf(id: number): Writer {
  const open = writers.get(id);
  if (open) return open;
  const data = opened.get(id);
  if (!data) throw new Error(`the vote writer thread has no relay store open as writer ${id}`);
  const writer = openWriter(id, data);
  writers.set(id, writer);
  return writer;
}

/** The body's text as `plainJsonBody` reads it: UTF-8, a byte-order mark dropped, nothing as `{}`. */
function parsedBody(body: Uint8Array): { document: unknown; escapes: boolean } | { unparsable: { message: string; text: string } } {
  let text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return { document: {}, escapes: true };
  try {
    return { document: JSON.parse(text) as unknown, escapes: text.includes('\\u') };
  } catch (error) {
    return { unparsable: { message: (error as Error).message, text } };
  }
}

async function answerVote(writer: Writer, message: Extract<HostToWriter, { type: 'vote' }>): Promise<VoteAnswer> {
  const { id, itemId } = message;
  const read = parsedBody(message.body);
  if ('unparsable' in read) return { id, unparsable: read.unparsable };
  try {
    // The route wrapper's check (decision 0490): text without `\u` escapes cannot hold what it looks for (0840).
    if (read.escapes) refuseUnstorableText(read.document, ['body']);
    const { vote, outcome } = await checkAndStoreVote(writer, itemId, read.document, message.nowMs);
    // Any vote that reached the write path may have changed the item's statements and the relay node's tally.
    writer.changed.add(itemId);
    return { id, status: outcome.stored ? 201 : 200, text: JSON.stringify(voteAnswerView(itemId, vote, outcome, writer.selfNodeId)) };
  } catch (error) {
    return { id, error: sendableError(error) };
  }
}

/** Sends each writer's answers of this turn in one message. */
function sendAnswers(): void {
  for (const writer of toSend) {
    const answers = writer.answers.splice(0);
    const changedItems = [...writer.changed];
    writer.changed.clear();
    post({ type: 'answers', writer: writer.id, commits: writer.store.commits, changedItems, answers });
  }
  toSend.clear();
}

function answer(writer: Writer, voteAnswer: VoteAnswer): void {
  writer.answers.push(voteAnswer);
  // After this turn's votes: those of one group commit answer together.
  if (toSend.size === 0) setImmediate(sendAnswers);
  toSend.add(writer);
}

port.on('message', (message: HostToWriter) => {
  if (message.type === 'open') {
    opened.set(message.writer, message.data);
  } else if (message.type === 'close') {
    const writer = writers.get(message.writer);
    writers.delete(message.writer);
    opened.delete(message.writer);
    (writer ? writer.store.close() : Promise.resolve()).then(
      () => post({ type: 'closed', id: message.id }),
      (error: unknown) => post({ type: 'closed', id: message.id, error: sendableError(error) }),
    );
  } else {
    let writer: Writer;
    try {
      writer = writerOf(message.writer);
    } catch (error) {
      // No store to answer with (the database could not be opened): this vote fails, the next tries again.
      post({ type: 'answers', writer: message.writer, commits: 0, changedItems: [], answers: [{ id: message.id, error: sendableError(error) }] });
      return;
    }
    writer.time.nowMs = message.nowMs;
    void answerVote(writer, message).then((voteAnswer) => answer(writer, voteAnswer));
  }
});
post({ type: 'ready' });
