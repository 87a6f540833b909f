import type { Clock } from '../../core/clock.js';
import type { Credentials } from './credentials.js';
import type { Federation } from './federation.js';
import type { FileStore } from './file-store.js';
import type { PhoneCodes } from './phone-codes.js';
import type { NodeKey } from './protocol.js';
import type { RelayStore } from './relay-store.js';
import type { Voting } from './voting.js';

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
}

/** Unix seconds of host milliseconds (the unit of `created_at` in signed documents). */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
