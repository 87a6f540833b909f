import type { Clock } from '../../core/clock.js';
import { relayLimits } from '../../wire/relay/relay-facts.js';
import type { Credentials } from './domain/credentials.js';
import type { Federation } from './domain/federation.js';
import type { FileStore } from './domain/file-store.js';
import type { PhoneCodes } from './domain/phone-codes.js';
import type { NodeKey } from '../../core/relay/node-id.js';
import type { RelayStore } from './relay-store.js';
import type { Voting } from './domain/voting.js';

/** What the route handlers share: one instance per relay service. */
export interface RelayDeps {
  store: RelayStore;
  clock: Clock;
  credentials: Credentials;
  codes: PhoneCodes;
  files: FileStore;
  voting: Voting;
  federation: Federation;
  /** The relay's own node (its key lives in the data dir). */
  selfKey: NodeKey;
  /** API base address, no trailing slash. */
  baseUrl: string;
  /** Human site address, no trailing slash. */
  humanUrl: string;
  /** Seed relays published by GET /seeds. */
  seeds: string[];
  /** Node ids allowed to add and probe peers over HTTP; empty: nobody. */
  operators: ReadonlySet<string>;
  log: (message: string, cause: unknown) => void;
  /** Payload bytes after which a GET /events page ends (`relayLimits.eventsPagePayloadMaxBytes` unless a test sets less). */
  eventsPagePayloadMaxBytes: number;
}

/** Unix seconds of host milliseconds (the unit of `created_at` in signed documents). */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/**
 * Why a statement's `created_at` is refused at `nowMs`, or null: more than `proofMaxSkewSeconds`
 * ahead of the relay clock. The one rule for votes however they arrive (POST /items/{id}/vote and
 * federation), so a statement refused over HTTP cannot come in through a peer instead. Old
 * statements are fine: a vote is a fact that stays true.
 */
export function voteTimeProblem(createdAt: number, nowMs: number): string | null {
  const now = unixSeconds(nowMs);
  if (createdAt <= now + relayLimits.proofMaxSkewSeconds) return null;
  return `created_at is in the future: ${createdAt - now} s ahead of the relay clock (at most ${relayLimits.proofMaxSkewSeconds} s)`;
}
