/**
 * The bench workers a lab runs (issue 10): each is a credential an administrator created (its
 * token stored only as a SHA-256), which announces the boards it serves and is heard from by its
 * heartbeats. A worker counts as online while it was heard from recently; nothing here reads a
 * clock, every time is the caller's.
 */
export interface WorkerRecord {
  workerId: string;
  label: string;
  /** Lower-case hex SHA-256 of the worker token; the token itself is never stored. */
  tokenSha256: string;
  createdAtMs: number;
  /** When an administrator revoked it; a revoked worker's token works no more. */
  revokedAtMs: number | null;
  /** When the worker last announced itself or sent a heartbeat; null before its first. */
  lastSeenAtMs: number | null;
  /** The boards it serves, as it last reported them. */
  boards: WorkerBoardReport[];
}

/** One board as a worker reports it: whether its backend can run it now, and why not. */
export interface WorkerBoardReport {
  board: string;
  /** The backend the worker runs the board on (mock, sim, qemu, renode, probe). */
  backend: string;
  available: boolean;
  /** Why the board cannot run now; null when it can. */
  reason: string | null;
  /** Its backend keeps board health (quarantine) in the server's store (decision 0421); absent: false. */
  keepsHealth?: boolean;
  /** Its backend can run a health check of it; absent: false. */
  healthCheck?: boolean;
  /** Unavailable because quarantined (its health is kept in the store, which then decides); absent: false. */
  quarantined?: boolean;
  /** How many instances of the board the worker runs at once (decision 0510); absent: 1. */
  poolSize?: number;
}

export interface WorkerRegistry {
  insert(worker: Pick<WorkerRecord, 'workerId' | 'label' | 'tokenSha256' | 'createdAtMs'>): Promise<void>;
  get(workerId: string): Promise<WorkerRecord | undefined>;
  /** The worker holding a token, revoked or not (the caller refuses a revoked one with its reason). */
  findByTokenSha256(tokenSha256: string): Promise<WorkerRecord | undefined>;
  /** Every worker, oldest first. */
  list(): Promise<WorkerRecord[]>;
  /** Revokes a worker (the first revocation's time stands); undefined when there is no such worker. */
  revoke(workerId: string, nowMs: number): Promise<WorkerRecord | undefined>;
  /** Records that the worker was heard from at `nowMs`, with the boards it serves when it says. */
  heardFrom(workerId: string, report: { nowMs: number; boards?: readonly WorkerBoardReport[] }): Promise<void>;
}

/** A `workers` row, as both stores keep it (snake_case, boards as JSON text). */
export interface WorkerRow {
  worker_id: string;
  label: string;
  token_sha256: string;
  created_at_ms: number;
  revoked_at_ms: number | null;
  last_seen_at_ms: number | null;
  boards_json: string;
}

export function workerFromRow(r: WorkerRow): WorkerRecord {
  return {
    workerId: r.worker_id,
    label: r.label,
    tokenSha256: r.token_sha256,
    createdAtMs: r.created_at_ms,
    revokedAtMs: r.revoked_at_ms,
    lastSeenAtMs: r.last_seen_at_ms,
    boards: JSON.parse(r.boards_json) as WorkerBoardReport[],
  };
}
