import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

type Rows = Record<string, unknown>[];

/** Everything a node owns, table by table, for GET /me/export (credentials excluded). */
export class ExportRepository {
  constructor(private readonly q: RelaySql) {}

  *rowsOf(nodeId: string): Steps<{ items: Rows; voteDocs: string[]; bots: Rows; invites: Rows; pairings: Rows; reports: Rows; events: Rows }> {
    const all = (sql: string, ...args: unknown[]) => this.q.all<Rows[number]>(sql, ...args);
    return {
      items: yield* all('SELECT item_id AS id, type, kind, title, body, file_bytes, media_type, bot_id, created_ms FROM items WHERE author = ? ORDER BY created_ms', nodeId),
      voteDocs: (yield* this.q.values('SELECT doc FROM votes WHERE voter = ? ORDER BY created_ms', nodeId)) as string[],
      bots: yield* all('SELECT bot_id, name, created_ms, revoked_ms FROM bots WHERE owner = ? ORDER BY created_ms', nodeId),
      invites: yield* all('SELECT code, created_ms, expires_ms, accepted_by, accepted_ms FROM invites WHERE inviter = ? ORDER BY created_ms', nodeId),
      pairings: yield* all('SELECT a, b, created_ms FROM pairs WHERE a = ? OR b = ? ORDER BY created_ms', nodeId, nodeId),
      reports: yield* all('SELECT item_id, reason, note, bot_id, created_ms FROM reports WHERE reporter = ? ORDER BY created_ms', nodeId),
      events: yield* all('SELECT seq, kind, subject, created_ms FROM events WHERE author = ? ORDER BY seq', nodeId),
    };
  }
}
