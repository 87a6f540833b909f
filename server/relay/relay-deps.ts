import type { Clock } from '../../core/clock.js';
import type { Credentials } from './domain/credentials.js';
import type { Federation } from './domain/federation.js';
import type { FileStore } from './domain/file-store.js';
import type { PhoneCodes } from './domain/phone-codes.js';
import type { RelayCounts } from './domain/relay-counts.js';
import type { NodeKey } from '../../core/relay/node-id.js';
import type { RelayStore } from './relay-store.js';
import type { Voting } from './domain/voting.js';
import type { SignatureChecksAhead } from './domain/signature-thread.js';

/** What the use cases and routes share: one instance per relay service. */
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
  /** What this process counts as it happens (votes taken and refused, rate-limit refusals), for `/metrics`. */
  counts: RelayCounts;
  /** Payload bytes after which a GET /events page ends (`relayLimits.eventsPagePayloadMaxBytes` unless a test sets less). */
  eventsPagePayloadMaxBytes: number;
  /** Lone votes' signatures checked off the loop while they are stored (decision 1090; SQLite only). Absent: checked first, on the loop. */
  signatureChecksAhead?: SignatureChecksAhead | null;
}
