import type { BoardHealthRecord, BoardHealthStore } from './board-health-store.js';
import { changeHealth, healthOf, putHealth } from './board-health-rules.js';
import type { FirmwareBlobs } from './firmware-blob-store.js';
import type { SqlExecutor } from './sql/sql-executor.js';
import { all, one, run } from '../sql-steps.js';
import { BoundedCache } from './bounded-cache.js';
import { checkWaitlistEntry, WAITLIST_KINDS, type WaitlistAddResult, type WaitlistEntry, type WaitlistKind, type WaitlistStore } from './waitlist-store.js';
import { type WorkerBoardReport, type WorkerRecord, type WorkerRegistry, type WorkerRow, workerFromRow } from './worker-registry.js';

/**
 * The bench store's small side tables, once for both databases (decision 0545): board health
 * (the probe backend's quarantine store), the waitlist, bench workers and, on PostgreSQL, firmware
 * blobs. Each method is one statement and needs no transaction, but board health's `update`, which
 * reads and writes a row as one step (decision 0551; its statements are in board-health-rules.ts).
 */

export class SqlBoardHealthStore implements BoardHealthStore {
  constructor(private readonly sql: SqlExecutor) {}

  get(boardId: string): Promise<BoardHealthRecord> {
    return this.sql.plain(() => healthOf(boardId));
  }

  async put(boardId: string, health: BoardHealthRecord): Promise<void> {
    await this.sql.plain(() => putHealth(boardId, health));
  }

  update(boardId: string, change: (health: BoardHealthRecord) => BoardHealthRecord | undefined): Promise<{ before: BoardHealthRecord; after: BoardHealthRecord }> {
    const d = this.sql.dialect;
    return this.sql.transaction(() => changeHealth(d, boardId, change));
  }
}

function isWaitlistKind(value: string): value is WaitlistKind {
  return (WAITLIST_KINDS as readonly string[]).includes(value);
}

export class SqlWaitlist implements WaitlistStore {
  constructor(private readonly sql: SqlExecutor) {}

  /** Adds an entry unless its email is already present. Callers pass a normalised, validated entry. */
  async add(entry: WaitlistEntry): Promise<WaitlistAddResult> {
    checkWaitlistEntry(entry);
    // First join wins: a second submission of the same address must not let anyone rewrite
    // someone else's entry, and must not reveal that the address was there (docs/pages.md).
    const changed = await this.sql.plain(() =>
      run('INSERT INTO waitlist (email, kind, note, joined_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT (email) DO NOTHING', [entry.email, entry.kind, entry.note, entry.joinedAtMs]),
    );
    return { created: changed === 1 };
  }

  async count(): Promise<number> {
    return (await this.sql.plain(() => one<{ n: number }>('SELECT COUNT(*) AS n FROM waitlist')))?.n ?? 0;
  }

  /** The newest entries first, at most `limit` of them; for the operator (admin view, export). */
  async list(options: { limit: number }): Promise<WaitlistEntry[]> {
    const rows = await this.sql.plain(() =>
      all<{ email: string; kind: string; note: string; joined_at_ms: number }>('SELECT email, kind, note, joined_at_ms FROM waitlist ORDER BY joined_at_ms DESC, email ASC LIMIT ?', [
        Math.max(0, Math.floor(options.limit)),
      ]),
    );
    return rows.map((row) => {
      if (!isWaitlistKind(row.kind)) throw new Error(`waitlist row has unknown kind ${JSON.stringify(row.kind)}`);
      return { email: row.email, kind: row.kind, note: row.note, joinedAtMs: row.joined_at_ms };
    });
  }
}

export class SqlWorkerRegistry implements WorkerRegistry {
  constructor(private readonly sql: SqlExecutor) {}

  async insert(worker: Pick<WorkerRecord, 'workerId' | 'label' | 'tokenSha256' | 'createdAtMs'>): Promise<void> {
    await this.sql.plain(() =>
      run("INSERT INTO workers (worker_id, label, token_sha256, created_at_ms, boards_json) VALUES (?, ?, ?, ?, '[]')", [worker.workerId, worker.label, worker.tokenSha256, worker.createdAtMs]),
    );
  }

  async get(workerId: string): Promise<WorkerRecord | undefined> {
    const row = await this.sql.plain(() => one<WorkerRow>('SELECT * FROM workers WHERE worker_id = ?', [workerId]));
    return row && workerFromRow(row);
  }

  async findByTokenSha256(tokenSha256: string): Promise<WorkerRecord | undefined> {
    const row = await this.sql.plain(() => one<WorkerRow>('SELECT * FROM workers WHERE token_sha256 = ?', [tokenSha256]));
    return row && workerFromRow(row);
  }

  async list(): Promise<WorkerRecord[]> {
    const seq = this.sql.dialect.seq;
    return (await this.sql.plain(() => all<WorkerRow>(`SELECT * FROM workers ORDER BY created_at_ms, ${seq}`))).map(workerFromRow);
  }

  async revoke(workerId: string, nowMs: number): Promise<WorkerRecord | undefined> {
    const row = await this.sql.plain(() => one<WorkerRow>('UPDATE workers SET revoked_at_ms = COALESCE(revoked_at_ms, ?) WHERE worker_id = ? RETURNING *', [nowMs, workerId]));
    return row && workerFromRow(row);
  }

  async heardFrom(workerId: string, report: { nowMs: number; boards?: readonly WorkerBoardReport[] }): Promise<void> {
    const { greatest } = this.sql.dialect;
    await this.sql.plain(() =>
      report.boards
        ? run(`UPDATE workers SET last_seen_at_ms = ${greatest}(COALESCE(last_seen_at_ms, 0), ?), boards_json = ? WHERE worker_id = ?`, [report.nowMs, JSON.stringify(report.boards), workerId])
        : run(`UPDATE workers SET last_seen_at_ms = ${greatest}(COALESCE(last_seen_at_ms, 0), ?) WHERE worker_id = ?`, [report.nowMs, workerId]),
    );
  }
}

/** How many firmware hashes a replica remembers as stored (64 hex characters each, plus the map's own). */
const KNOWN_BLOBS = 4096;
/** Firmware a replica keeps in memory for its workers: the last few images, each at most 1 MiB (at most 16 MiB in all). */
const KEPT_BLOBS = 16;
const KEPT_BLOB_MAX_BYTES = 1024 * 1024;

/** Firmware by sha256 in the database (PostgreSQL), so a job accepted by one replica runs from any. */
export class SqlFirmwareBlobs implements FirmwareBlobs {
  /**
   * Hashes this replica stored or read: a blob is named by its content and never deleted (no
   * statement of the store does), so a CI pipeline sending the same image job after job pays its
   * upload to the database once, not at every job (decision 0600).
   */
  private readonly known = new BoundedCache<string, true>(KNOWN_BLOBS);
  /** The bytes of the last images workers fetched through this replica (the same image, job after job). */
  private readonly kept = new BoundedCache<string, Uint8Array>(KEPT_BLOBS);

  constructor(private readonly sql: SqlExecutor) {}

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    if (this.known.has(sha256)) return;
    await this.sql.plain(() => run('INSERT INTO firmware_blobs (sha256, bytes) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING', [sha256, Buffer.from(bytes)]));
    this.known.set(sha256, true);
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    // Copies out: a caller may change what it got, never what is kept.
    const kept = this.kept.get(sha256);
    if (kept) return kept.slice();
    const row = await this.sql.plain(() => one<{ bytes: Buffer }>('SELECT bytes FROM firmware_blobs WHERE sha256 = ?', [sha256]));
    if (!row) return undefined;
    this.known.set(sha256, true);
    const bytes = new Uint8Array(row.bytes);
    if (bytes.length <= KEPT_BLOB_MAX_BYTES) this.kept.set(sha256, bytes.slice());
    return bytes;
  }
}
