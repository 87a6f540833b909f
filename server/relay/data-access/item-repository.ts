import type { PreparedStatements } from './prepared-statements.js';

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

/** Items (claims and files) and reports about them. */
export class ItemRepository {
  constructor(private readonly q: PreparedStatements) {}

  get(itemId: string): ItemRow | undefined {
    return this.q.sql('SELECT * FROM items WHERE item_id = ?').get(itemId) as ItemRow | undefined;
  }

  exists(itemId: string): boolean {
    return this.q.sql('SELECT 1 FROM items WHERE item_id = ?').get(itemId) !== undefined;
  }

  insert(row: ItemRow): void {
    this.q
      .sql('INSERT INTO items (item_id, type, kind, title, body, file_bytes, media_type, author, bot_id, origin, created_ms, authorship) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(row.item_id, row.type, row.kind, row.title, row.body, row.file_bytes, row.media_type, row.author, row.bot_id, row.origin, row.created_ms, row.authorship);
  }

  /** Adds the author's statement to an item stored without one; false when it has one or another author. */
  attachAuthorship(itemId: string, author: string, authorshipJson: string): boolean {
    return this.q.sql('UPDATE items SET authorship = ? WHERE item_id = ? AND author = ? AND authorship IS NULL').run(authorshipJson, itemId, author).changes > 0;
  }

  /** Newest first, before cursor `after` (a rowid), optionally by one author; each row carries its cursor. */
  page(after: number, author: string | undefined, limit: number): (ItemRow & { cursor: number })[] {
    return (
      author
        ? this.q.sql('SELECT rowid AS cursor, * FROM items WHERE rowid < ? AND author = ? ORDER BY rowid DESC LIMIT ?').all(after, author, limit)
        : this.q.sql('SELECT rowid AS cursor, * FROM items WHERE rowid < ? ORDER BY rowid DESC LIMIT ?').all(after, limit)
    ) as (ItemRow & { cursor: number })[];
  }

  /** Items whose title matches a LIKE pattern (escaped with `\`), oldest first. */
  searchTitles(likePattern: string, limit: number): Pick<ItemRow, 'item_id' | 'type' | 'kind' | 'title' | 'author' | 'created_ms'>[] {
    return this.q
      .sql("SELECT item_id, type, kind, title, author, created_ms FROM items WHERE title LIKE ? ESCAPE '\\' ORDER BY created_ms LIMIT ?")
      .all(likePattern, limit) as Pick<ItemRow, 'item_id' | 'type' | 'kind' | 'title' | 'author' | 'created_ms'>[];
  }

  countByAuthor(author: string): number {
    return this.q.count('SELECT COUNT(*) AS n FROM items WHERE author = ?', author);
  }

  count(): number {
    return this.q.count('SELECT COUNT(*) AS n FROM items');
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
  constructor(private readonly q: PreparedStatements) {}

  upsert(report: ReportRow & { reporter: string }): void {
    this.q
      .sql(
        'INSERT INTO reports (item_id, reporter, bot_id, reason, note, created_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id, reporter) DO UPDATE SET reason = excluded.reason, note = excluded.note, bot_id = excluded.bot_id, created_ms = excluded.created_ms',
      )
      .run(report.item_id, report.reporter, report.bot_id, report.reason, report.note, report.created_ms);
  }

  countForItem(itemId: string): number {
    return this.q.count('SELECT COUNT(*) AS n FROM reports WHERE item_id = ?', itemId);
  }

  /** The reporter's reports, newest first. */
  byReporter(reporter: string): ReportRow[] {
    return this.q.sql('SELECT item_id, reason, note, bot_id, created_ms FROM reports WHERE reporter = ? ORDER BY created_ms DESC, report_id DESC').all(reporter) as ReportRow[];
  }
}
