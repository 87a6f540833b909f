import { type Problem, RelayError as CoreRelayError } from '../../../core/relay/problem.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import { DatabaseUnavailableError, StorageFault, StorageFullError } from '../../storage/storage-faults.js';
import { RELAY_ERROR_CODES, RelayRefusal, type RelayErrorCode, type RelayRefusalExtra } from './relay-errors.js';
import type { DefaultSliceSources } from './self-voter.js';

/**
 * The messages between the relay's event loop and its vote writer thread (decision 0921, after
 * 0770). Both sides are this package's code; the host still checks each message's envelope before
 * using it, and a message it does not understand ends the thread (`VoteWriter`).
 */

/** Where the thread opens the relay's store: the same SQLite database as the event loop's. */
export interface WriterDatabase {
  dataDir: string;
  /** The event loop's store's counter (`RelayStore.commitNotices`, shared memory), which syncs the writer's commits. */
  commitNotices: Int32Array;
}

/** What the thread opens a relay's write path with. */
export interface WriterThreadData {
  database: WriterDatabase;
  /** The relay node's secret key: the thread signs the relay node's statements as the loop did. */
  selfSecretKey: Uint8Array;
  selfSlice?: QuorumSet;
  defaultSliceFrom: DefaultSliceSources;
}

/**
 * A vote as the route read it: the body's bytes as sent (`plainJsonBytes`), the path's item id and
 * the host clock's time. The votes of the messages the thread takes in one turn commit together
 * (`VoteIngest`'s group commit). One thread serves every relay of the process (`writer`
 * names whose store; a test process runs many relays): `open` before the writer's first vote,
 * `close` answered once its store closed.
 */
export type HostToWriter =
  | { type: 'open'; writer: number; data: WriterThreadData }
  | { type: 'vote'; writer: number; id: number; itemId: string; body: Uint8Array; nowMs: number }
  | { type: 'close'; writer: number; id: number };

/**
 * One vote's answer: its status and answer's JSON text; a refusal or fault (`error`); or a body
 * that is not JSON (`unparsable`: `JSON.parse`'s message and the text, the body parser's 400).
 */
export type VoteAnswer =
  | { id: number; status: number; text: string }
  | { id: number; error: SentError }
  | { id: number; unparsable: { message: string; text: string } };

/**
 * The thread's answers go back together, one message per turn of its loop (a group commit's
 * votes), with the items whose statements its commits changed: the host forgets their cached
 * statements and tallies before it writes any of these answers. `commits`: the thread's write
 * transactions of this relay so far.
 */
export type WriterToHost =
  | { type: 'ready' }
  | { type: 'answers'; writer: number; commits: number; changedItems: string[]; answers: VoteAnswer[] }
  | { type: 'closed'; id: number; error?: SentError };

/** An error as it crosses the thread boundary: structured clone keeps no class and no own field. */
export type SentError =
  | { kind: 'refusal'; code: RelayErrorCode; detail: string; extra: RelayRefusalExtra }
  | { kind: 'core'; message: string; problems: Problem[] }
  | { kind: 'storage'; fault: StorageFault['kind']; message: string; retryAfterSeconds: number }
  | { kind: 'other'; name: string; message: string; stack?: string };

/** `error` as the thread sends it. */
export function sendableError(error: unknown): SentError {
  if (error instanceof RelayRefusal) return { kind: 'refusal', code: error.code, detail: error.detail, extra: error.extra };
  if (error instanceof CoreRelayError) return { kind: 'core', message: error.message, problems: error.problems };
  if (error instanceof StorageFault) return { kind: 'storage', fault: error.kind, message: error.message, retryAfterSeconds: error.retryAfterSeconds };
  const plain = error instanceof Error ? error : new Error(String(error));
  return { kind: 'other', name: plain.name, message: plain.message, ...(plain.stack ? { stack: plain.stack } : {}) };
}

/** The error the thread sent, as the class the relay's error handler maps (the same answer as on the loop; domain code throws no other). */
export function receivedError(sent: SentError): Error {
  switch (sent.kind) {
    case 'refusal':
      return RELAY_ERROR_CODES.includes(sent.code) ? new RelayRefusal(sent.code, sent.detail, sent.extra) : new Error(`vote writer thread: unknown refusal code ${String(sent.code)}: ${sent.detail}`);
    case 'core':
      return new CoreRelayError(sent.message, sent.problems);
    case 'storage':
      return sent.fault === 'storage-full' ? new StorageFullError(sent.message, sent.retryAfterSeconds) : new DatabaseUnavailableError(sent.message, sent.retryAfterSeconds);
    default: {
      const error = new Error(`${sent.name} in the vote writer thread: ${sent.message}`);
      if (sent.stack) error.stack = `${error.message}\n--- in the vote writer thread:\n${sent.stack}`;
      return error;
    }
  }
}

/** `raw` read as a writer message, or null when its envelope is not one. */
export function writerMessage(raw: unknown): WriterToHost | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const message = raw as Record<string, unknown>;
  switch (message.type) {
    case 'ready':
      return message as WriterToHost;
    case 'closed':
      return typeof message.id === 'number' ? (message as WriterToHost) : null;
    case 'answers':
      return typeof message.writer === 'number' && typeof message.commits === 'number' && Array.isArray(message.changedItems) && Array.isArray(message.answers) ? (message as WriterToHost) : null;
    default:
      return null;
  }
}
