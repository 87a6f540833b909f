import type { Steps } from '../sql-steps.js';
import { type RelaySql, likeOf } from './relay-sql.js';
import { trigramMatchOf } from './trigram-prefilter.js';

export interface ItemRow {
  item_id: string;
  type: 'claim' | 'file';
  kind: string;
  title: string;
  body: string;
  file_bytes: number | null;
  media_type: string | null;
  author: string;
  bot_id: string | null;
  origin: string | null;
  created_ms: number;
  /** The author's signed x.item/1 statement (JSON), or null when posted here without one. */
  authorship: string | null;
}

/** The columns of an ItemRow (PostgreSQL's table has one more, `item_seq`, where SQLite pages by rowid). */
const ITEM_COLUMNS = 'item_id, type, kind, title, body, file_bytes, media_type, author, bot_id, origin, created_ms, authorship';

/** Items (claims and files) and reports about them. */
export class ItemRepository {
  constructor(private readonly q: RelaySql) {}

  *get(itemId: string): Steps<ItemRow | undefined> {
    return (yield* this.q.get(`SELECT ${ITEM_COLUMNS} FROM items WHERE item_id = ?`, itemId)) as ItemRow | undefined;
  }

  *exists(itemId: string): Steps<boolean> {
    return (yield* this.q.get('SELECT 1 FROM items WHERE item_id = ?', itemId)) !== undefined;
  }

  *insert(row: ItemRow): Steps<void> {
    yield* this.q.run('INSERT INTO items (item_id, type, kind, title, body, file_bytes, media_type, author, bot_id, origin, created_ms, authorship) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', row.item_id, row.type, row.kind, row.title, row.body, row.file_bytes, row.media_type, row.author, row.bot_id, row.origin, row.created_ms, row.authorship);
  }

  /** Adds the author's statement to an item stored without one; false when it has one or another author. */
  *attachAuthorship(itemId: string, author: string, authorshipJson: string): Steps<boolean> {
    return (yield* this.q.run('UPDATE items SET authorship = ? WHERE item_id = ? AND author = ? AND authorship IS NULL', authorshipJson, itemId, author)) > 0;
  }

  /** Newest first, before cursor `after` (a rowid), optionally by one author; each row carries its cursor. */
  *page(after: number, author: string | undefined, limit: number): Steps<(ItemRow & { cursor: number })[]> {
    // Insertion order: SQLite's rowid, PostgreSQL's item_seq.
    const seq = this.q.dialect === 'postgres' ? 'item_seq' : 'rowid';
    return (
      author
        ? (yield* this.q.all(`SELECT ${seq} AS cursor, ${ITEM_COLUMNS} FROM items WHERE ${seq} < ? AND author = ? ORDER BY ${seq} DESC LIMIT ?`, after, author, limit))
        : (yield* this.q.all(`SELECT ${seq} AS cursor, ${ITEM_COLUMNS} FROM items WHERE ${seq} < ? ORDER BY ${seq} DESC LIMIT ?`, after, limit))
    ) as (ItemRow & { cursor: number })[];
  }

  /**
   * Items whose title matches a LIKE pattern (escaped with `\`), oldest first (ties by id). An
   * index narrows the rows when it can (decisions 0505, 0506): PostgreSQL's planner uses pg_trgm
   * by itself; on SQLite the trigram table picks the candidates, and the same LIKE decides.
   */
  *searchTitles(likePattern: string, limit: number): Steps<Pick<ItemRow, 'item_id' | 'type' | 'kind' | 'title' | 'author' | 'created_ms'>[]> {
    const match = this.q.dialect === 'sqlite' ? trigramMatchOf(likePattern) : undefined;
    const candidates = match === undefined ? '' : 'rowid IN (SELECT rowid FROM items_search WHERE items_search MATCH ?) AND ';
    const args = match === undefined ? [likePattern, limit] : [match, likePattern, limit];
    return (yield* this.q.all(`SELECT item_id, type, kind, title, author, created_ms FROM items WHERE ${candidates}title ${likeOf(this.q)} ? ESCAPE '\\' ORDER BY created_ms, item_id LIMIT ?`, ...args)) as Pick<ItemRow, 'item_id' | 'type' | 'kind' | 'title' | 'author' | 'created_ms'>[];
  }

  *countByAuthor(author: string): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM items WHERE author = ?', author);
  }

  /** Walks the table: tests check the kept counts against it; a request reads RelayCountRepository (decision 1100). */
  *count(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM items');
  }
}

export interface ReportRow {
  item_id: string;
  reason: string;
  note: string;
  bot_id: string | null;
  created_ms: number;
}

/** Reports: one per node and item; reporting again replaces it. */
export class ReportRepository {
  constructor(private readonly q: RelaySql) {}

  *upsert(report: ReportRow & { reporter: string }): Steps<void> {
    yield* this.q.run('INSERT INTO reports (item_id, reporter, bot_id, reason, note, created_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id, reporter) DO UPDATE SET reason = excluded.reason, note = excluded.note, bot_id = excluded.bot_id, created_ms = excluded.created_ms', report.item_id, report.reporter, report.bot_id, report.reason, report.note, report.created_ms);
  }

  *countForItem(itemId: string): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM reports WHERE item_id = ?', itemId);
  }

  /** The reporter's reports, newest first. */
  *byReporter(reporter: string): Steps<ReportRow[]> {
    return (yield* this.q.all('SELECT item_id, reason, note, bot_id, created_ms FROM reports WHERE reporter = ? ORDER BY created_ms DESC, report_id DESC', reporter)) as ReportRow[];
  }
}
