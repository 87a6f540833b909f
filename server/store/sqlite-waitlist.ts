import type BetterSqlite3 from 'better-sqlite3';
import { type WaitlistAddResult, type WaitlistEntry, type WaitlistKind, type WaitlistStore, WAITLIST_KINDS, checkWaitlistEntry } from './waitlist-store.js';

interface WaitlistRow {
  email: string;
  kind: string;
  note: string;
  joined_at_ms: number;
}

function isWaitlistKind(value: string): value is WaitlistKind {
  return (WAITLIST_KINDS as readonly string[]).includes(value);
}

/**
 * The waitlist, in a table of the bench service's SQLite database, so it survives restarts with
 * the file. Built by `SqliteBenchStore` on its database (its migrations create the table,
 * bench-store-migrations.ts). Every `add` is committed before it returns.
 */
export class SqliteWaitlist implements WaitlistStore {
  private readonly insert: BetterSqlite3.Statement<[string, string, string, number]>;
  private readonly countAll: BetterSqlite3.Statement<[]>;
  private readonly selectRecent: BetterSqlite3.Statement<[number]>;

  constructor(db: BetterSqlite3.Database) {
    // First join wins: a second submission of the same address must not let anyone rewrite
    // someone else's entry, and must not reveal that the address was there (docs/pages.md).
    this.insert = db.prepare(
      'INSERT INTO waitlist (email, kind, note, joined_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT (email) DO NOTHING',
    );
    this.countAll = db.prepare('SELECT COUNT(*) AS n FROM waitlist');
    this.selectRecent = db.prepare(
      'SELECT email, kind, note, joined_at_ms FROM waitlist ORDER BY joined_at_ms DESC, email ASC LIMIT ?',
    );
  }

  /** Adds an entry unless its email is already present. Callers pass a normalised, validated entry. */
  async add(entry: WaitlistEntry): Promise<WaitlistAddResult> {
    checkWaitlistEntry(entry);
    const info = this.insert.run(entry.email, entry.kind, entry.note, entry.joinedAtMs);
    return { created: info.changes === 1 };
  }

  /** Number of entries on the list. */
  async count(): Promise<number> {
    const row = this.countAll.get() as { n: number } | undefined;
    return row?.n ?? 0;
  }

  /** The newest entries first, at most `limit` of them; for the operator (admin view, export). */
  async list(options: { limit: number }): Promise<WaitlistEntry[]> {
    const limit = Math.max(0, Math.floor(options.limit));
    const rows = this.selectRecent.all(limit) as WaitlistRow[];
    return rows.map((row) => {
      if (!isWaitlistKind(row.kind)) throw new Error(`waitlist row has unknown kind ${JSON.stringify(row.kind)}`);
      return { email: row.email, kind: row.kind, note: row.note, joinedAtMs: row.joined_at_ms };
    });
  }
}
