import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

/** A row of `slices`, the quorum set as stored JSON. */
export interface SliceRow {
  qset: string;
  hash: string;
  t_auto: number;
  /** The node's signed x.slice/1 declaration (JSON), or null when published here without one. */
  declaration: string | null;
}

/** Published slices, quorum sets by hash, and what the default relay slice is built from. */
export class SliceRepository {
  constructor(private readonly q: RelaySql) {}

  *get(nodeId: string): Steps<SliceRow | undefined> {
    return (yield* this.q.get('SELECT qset, hash, t_auto, declaration FROM slices WHERE node_id = ?', nodeId)) as SliceRow | undefined;
  }

  /** The version a stored slice was declared at (for last-writer-wins between relays). */
  *declaredAt(nodeId: string): Steps<{ hash: string; updated_ms: number } | undefined> {
    return (yield* this.q.get('SELECT hash, updated_ms FROM slices WHERE node_id = ?', nodeId)) as { hash: string; updated_ms: number } | undefined;
  }

  *put(nodeId: string, slice: { qsetJson: string; hash: string; tAuto: boolean; declarationJson?: string | null }, updatedMs: number): Steps<void> {
    yield* this.q.run('INSERT INTO slices (node_id, qset, hash, t_auto, updated_ms, declaration) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (node_id) DO UPDATE SET qset = excluded.qset, hash = excluded.hash, t_auto = excluded.t_auto, updated_ms = excluded.updated_ms, declaration = excluded.declaration', nodeId, slice.qsetJson, slice.hash, slice.tAuto ? 1 : 0, updatedMs, slice.declarationJson ?? null);
  }

  /** Slices by node, for the network view. */
  *edges(limit: number): Steps<{ node_id: string; qset: string; hash: string }[]> {
    return (yield* this.q.all('SELECT node_id, qset, hash FROM slices ORDER BY node_id LIMIT ?', limit)) as { node_id: string; qset: string; hash: string }[];
  }

  *rememberQuorumSet(hash: string, qsetJson: string): Steps<void> {
    yield* this.q.run('INSERT INTO qsets (hash, qset) VALUES (?, ?) ON CONFLICT DO NOTHING', hash, qsetJson);
  }

  *quorumSetJson(hash: string): Steps<string | undefined> {
    return (yield* this.q.value('SELECT qset FROM qsets WHERE hash = ?', hash)) as string | undefined;
  }

  /** Bumped by triggers whenever nodes or peer relay nodes change (see the schema); the default relay slice is rebuilt then. */
  *membershipVersion(): Steps<number> {
    return (yield* this.q.value('SELECT version FROM membership WHERE id = 1')) as number;
  }

  /** Node ids the peers at these URLs reported (in /health), for the default relay slice; unknown ones are skipped. */
  *peerNodeIds(urls: readonly string[]): Steps<string[]> {
    if (urls.length === 0) return [];
    const urlList = this.q.dialect === 'postgres' ? 'SELECT json_array_elements_text(?::json)' : 'SELECT value FROM json_each(?)';
    return (yield* this.q.values(`SELECT DISTINCT node_id FROM peers WHERE node_id IS NOT NULL AND url IN (${urlList}) ORDER BY node_id`, JSON.stringify(urls))) as string[];
  }
}
