import { type BoardHealthRecord, type BoardHealthStore, healthyBoardRecord } from '../board-health-store.js';
import { checkWaitlistEntry, type WaitlistAddResult, type WaitlistEntry, type WaitlistKind, type WaitlistStore } from '../waitlist-store.js';
import { type WorkerBoardReport, type WorkerRecord, type WorkerRegistry, type WorkerRow, workerFromRow } from '../worker-registry.js';
import type { FirmwareBlobs } from '../firmware-blob-store.js';
import type { PgDatabase } from './pg-database.js';

/** Board health, the waitlist, workers and firmware blobs of the PostgreSQL store: each a small table. */

export class PgBoardHealthStore implements BoardHealthStore {
  constructor(private readonly db: PgDatabase) {}

  async get(boardId: string): Promise<BoardHealthRecord> {
    const [row] = await this.db.query<{ consecutive_failures: number; last_failure: string | null; quarantined_since_ms: number | null; quarantine_reason: string | null }>(
      'SELECT consecutive_failures, last_failure, quarantined_since_ms, quarantine_reason FROM board_health WHERE board = $1',
      [boardId],
    );
    if (!row) return { ...healthyBoardRecord };
    return {
      consecutiveFailures: row.consecutive_failures,
      lastFailure: row.last_failure ?? undefined,
      quarantine: row.quarantined_since_ms !== null && row.quarantine_reason !== null ? { sinceMs: row.quarantined_since_ms, reason: row.quarantine_reason } : undefined,
    };
  }

  async put(boardId: string, health: BoardHealthRecord): Promise<void> {
    if (!Number.isInteger(health.consecutiveFailures) || health.consecutiveFailures < 0) {
      throw new RangeError(`board ${boardId}: consecutiveFailures must be a non-negative integer, got ${health.consecutiveFailures}`);
    }
    await this.db.query(
      `INSERT INTO board_health (board, consecutive_failures, last_failure, quarantined_since_ms, quarantine_reason) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (board) DO UPDATE SET consecutive_failures = EXCLUDED.consecutive_failures, last_failure = EXCLUDED.last_failure,
         quarantined_since_ms = EXCLUDED.quarantined_since_ms, quarantine_reason = EXCLUDED.quarantine_reason`,
      [boardId, health.consecutiveFailures, health.lastFailure ?? null, health.quarantine?.sinceMs ?? null, health.quarantine?.reason ?? null],
    );
  }
}

export class PgWaitlist implements WaitlistStore {
  constructor(private readonly db: PgDatabase) {}

  async add(entry: WaitlistEntry): Promise<WaitlistAddResult> {
    checkWaitlistEntry(entry);
    const rows = await this.db.query(
      'INSERT INTO waitlist (email, kind, note, joined_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING RETURNING email',
      [entry.email, entry.kind, entry.note, entry.joinedAtMs],
    );
    return { created: rows.length === 1 };
  }

  async count(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM waitlist');
    return row?.n ?? 0;
  }

  async list(options: { limit: number }): Promise<WaitlistEntry[]> {
    const rows = await this.db.query<{ email: string; kind: WaitlistKind; note: string; joined_at_ms: number }>(
      'SELECT email, kind, note, joined_at_ms FROM waitlist ORDER BY joined_at_ms DESC, email ASC LIMIT $1',
      [Math.max(0, Math.floor(options.limit))],
    );
    return rows.map((r) => ({ email: r.email, kind: r.kind, note: r.note, joinedAtMs: r.joined_at_ms }));
  }
}

export class PgWorkerRegistry implements WorkerRegistry {
  constructor(private readonly db: PgDatabase) {}

  async insert(worker: Pick<WorkerRecord, 'workerId' | 'label' | 'tokenSha256' | 'createdAtMs'>): Promise<void> {
    await this.db.query("INSERT INTO workers (worker_id, label, token_sha256, created_at_ms, boards_json) VALUES ($1, $2, $3, $4, '[]')", [
      worker.workerId,
      worker.label,
      worker.tokenSha256,
      worker.createdAtMs,
    ]);
  }

  async get(workerId: string): Promise<WorkerRecord | undefined> {
    const [row] = await this.db.query<WorkerRow>('SELECT * FROM workers WHERE worker_id = $1', [workerId]);
    return row && workerFromRow(row);
  }

  async findByTokenSha256(tokenSha256: string): Promise<WorkerRecord | undefined> {
    const [row] = await this.db.query<WorkerRow>('SELECT * FROM workers WHERE token_sha256 = $1', [tokenSha256]);
    return row && workerFromRow(row);
  }

  async list(): Promise<WorkerRecord[]> {
    return (await this.db.query<WorkerRow>('SELECT * FROM workers ORDER BY created_at_ms, seq')).map(workerFromRow);
  }

  async revoke(workerId: string, nowMs: number): Promise<WorkerRecord | undefined> {
    await this.db.query('UPDATE workers SET revoked_at_ms = COALESCE(revoked_at_ms, $1) WHERE worker_id = $2', [nowMs, workerId]);
    return this.get(workerId);
  }

  async heardFrom(workerId: string, report: { nowMs: number; boards?: readonly WorkerBoardReport[] }): Promise<void> {
    await this.db.query(
      'UPDATE workers SET last_seen_at_ms = GREATEST(COALESCE(last_seen_at_ms, 0), $1), boards_json = COALESCE($2, boards_json) WHERE worker_id = $3',
      [report.nowMs, report.boards ? JSON.stringify(report.boards) : null, workerId],
    );
  }
}

/** Firmware by sha256 in the database, so a job accepted by one replica runs from any. */
export class PgFirmwareBlobs implements FirmwareBlobs {
  constructor(private readonly db: PgDatabase) {}

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    await this.db.query('INSERT INTO firmware_blobs (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING', [sha256, Buffer.from(bytes)]);
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    const [row] = await this.db.query<{ bytes: Buffer }>('SELECT bytes FROM firmware_blobs WHERE sha256 = $1', [sha256]);
    return row ? new Uint8Array(row.bytes) : undefined;
  }
}
