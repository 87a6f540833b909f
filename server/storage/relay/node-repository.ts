import type { Steps } from '../sql-steps.js';
import { type RelaySql, likeOf } from './relay-sql.js';
import { trigramMatchOf } from './trigram-prefilter.js';

/** A row of `nodes`: a node registered here (`local` 1) or learned from a peer (0). */
export interface NodeRow {
  node_id: string;
  local: number;
  name: string;
  about: string;
  cred_version: number;
  registration: string;
  origin: string | null;
  invited_by: string | null;
  listed: number;
  phone_discoverable: number;
  created_ms: number;
  updated_ms: number;
}

/** Nodes and the proofs (signed register/session documents) they already used. */
export class NodeRepository {
  constructor(private readonly q: RelaySql) {}

  *get(nodeId: string): Steps<NodeRow | undefined> {
    return (yield* this.q.get('SELECT * FROM nodes WHERE node_id = ?', nodeId)) as NodeRow | undefined;
  }

  *exists(nodeId: string): Steps<boolean> {
    return (yield* this.q.get('SELECT 1 FROM nodes WHERE node_id = ?', nodeId)) !== undefined;
  }

  /** The credential version of a node registered here; undefined for unknown and learned nodes. */
  *localCredVersion(nodeId: string): Steps<number | undefined> {
    const row = (yield* this.q.get('SELECT cred_version FROM nodes WHERE node_id = ? AND local = 1', nodeId)) as { cred_version: number } | undefined;
    return row?.cred_version;
  }

  /** Records a signature as used; false when it already was (a replayed document). */
  *burnProof(sig: string, nowMs: number): Steps<boolean> {
    return (yield* this.q.run('INSERT INTO used_proofs (sig, used_ms) VALUES (?, ?) ON CONFLICT DO NOTHING', sig, nowMs)) > 0;
  }

  /** A node registered here (`local` 1) or, with `local` false, one the relay holds without credentials (its own node). */
  *insert(node: { nodeId: string; local: boolean; name: string; registration: string; nowMs: number }): Steps<void> {
    yield* this.q.run('INSERT INTO nodes (node_id, local, name, registration, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?)', node.nodeId, node.local ? 1 : 0, node.name, node.registration, node.nowMs, node.nowMs);
  }

  /** A node learned from a peer; false when the relay already knew it. */
  *insertLearned(node: { nodeId: string; name: string; registration: string; origin: string; nowMs: number }): Steps<boolean> {
    return (
      (yield* this.q.run('INSERT INTO nodes (node_id, local, name, registration, origin, created_ms, updated_ms) VALUES (?, 0, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING', node.nodeId, node.name, node.registration, node.origin, node.nowMs, node.nowMs)) > 0
    );
  }

  /** A known node registers here again: it becomes local; a given name replaces the old one. */
  *markLocal(nodeId: string, name: string | null, nowMs: number): Steps<void> {
    yield* this.q.run('UPDATE nodes SET local = 1, name = COALESCE(?, name), updated_ms = ? WHERE node_id = ?', name, nowMs, nodeId);
  }

  /** Sets name and about; null keeps the current value. */
  *updateProfile(nodeId: string, change: { name: string | null; about: string | null }, nowMs: number): Steps<void> {
    yield* this.q.run('UPDATE nodes SET name = COALESCE(?, name), about = COALESCE(?, about), updated_ms = ? WHERE node_id = ?', change.name, change.about, nowMs, nodeId);
  }

  /** Sets the directory flags; null keeps the current value. */
  *updateDirectory(nodeId: string, change: { listed: boolean | null; phoneDiscoverable: boolean | null }, nowMs: number): Steps<void> {
    const flag = (b: boolean | null) => (b === null ? null : Number(b));
    yield* this.q.run('UPDATE nodes SET listed = COALESCE(?, listed), phone_discoverable = COALESCE(?, phone_discoverable), updated_ms = ? WHERE node_id = ?', flag(change.listed), flag(change.phoneDiscoverable), nowMs, nodeId);
  }

  *setInvitedBy(nodeId: string, inviter: string, nowMs: number): Steps<void> {
    yield* this.q.run('UPDATE nodes SET invited_by = ?, updated_ms = ? WHERE node_id = ?', inviter, nowMs, nodeId);
  }

  /** Bumps the credential version (revoking every human credential issued before); returns the new one. */
  *bumpCredVersion(nodeId: string, nowMs: number): Steps<number> {
    yield* this.q.run('UPDATE nodes SET cred_version = cred_version + 1, updated_ms = ? WHERE node_id = ?', nowMs, nodeId);
    return ((yield* this.q.get('SELECT cred_version FROM nodes WHERE node_id = ?', nodeId)) as { cred_version: number }).cred_version;
  }

  /** Oldest first (ties by id), at most `limit`. */
  *oldest(limit: number): Steps<NodeRow[]> {
    return (yield* this.q.all('SELECT * FROM nodes ORDER BY created_ms, node_id LIMIT ?', limit)) as NodeRow[];
  }

  /**
   * Listed nodes whose name or about matches a LIKE pattern (escaped with `\`), oldest first (ties
   * by id); narrowed by a trigram index like ItemRepository.searchTitles (decisions 0505, 0506).
   */
  *searchListed(likePattern: string, limit: number): Steps<NodeRow[]> {
    const like = likeOf(this.q);
    const match = this.q.dialect === 'sqlite' ? trigramMatchOf(likePattern) : undefined;
    // A MATCH over both columns keeps every node whose name or about holds all the runs.
    const candidates = match === undefined ? '' : 'rowid IN (SELECT rowid FROM nodes_search WHERE nodes_search MATCH ?) AND ';
    const args = match === undefined ? [likePattern, likePattern, limit] : [match, likePattern, likePattern, limit];
    return (yield* this.q.all(`SELECT * FROM nodes WHERE ${candidates}listed = 1 AND (name ${like} ? ESCAPE '\\' OR about ${like} ? ESCAPE '\\') ORDER BY created_ms, node_id LIMIT ?`, ...args)) as NodeRow[];
  }

  /** Walks the table: tests check the kept counts against it; a request reads RelayCountRepository (decision 1100). */
  *count(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM nodes');
  }

  /** Walks the table: tests check the kept count against it; a request reads RelayCountRepository (decision 1100). */
  *countLocal(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM nodes WHERE local = 1');
  }
}
