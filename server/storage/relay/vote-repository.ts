import type { BulletinState } from '../../../core/relay/tally.js';
import type { VoteValue } from '../../../core/relay/vote.js';
import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

/** Where a statement sits in an item's list: the order of `keysOf` (created_ms, voter, value, phase). */
export interface StatementKey {
  createdMs: number;
  voter: string;
  value: string;
  phase: string;
}

/** The highest bulletin a node had for an item at a committed state (a row of `bulletin_floors`), raised on write paths only. */
export interface Floor {
  state: BulletinState;
  value: VoteValue | null;
  acceptedVia: 'quorum' | 'v-blocking' | null;
}

/** Signed statements as received (deduplicated on voter, item, value, phase) and the bulletin floors. */
export class VoteRepository {
  constructor(private readonly q: RelaySql) {}

  /** Stores a statement; false when the same (voter, item, value, phase) is already stored. */
  *insertIfNew(vote: { voter: string; item: string; value: string; phase: string }, doc: string, origin: string | null, nowMs: number): Steps<boolean> {
    return (
      (yield* this.q.run('INSERT INTO votes (voter, item_id, value, phase, doc, origin, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING', vote.voter, vote.item, vote.value, vote.phase, doc, origin, nowMs)) > 0
    );
  }

  /** The signature of the document kept in `votes` for the statement's key, or undefined. */
  *sigOf(vote: { voter: string; item: string; value: string; phase: string }): Steps<string | undefined> {
    const sig = this.q.dialect === 'postgres' ? "doc::json->>'sig'" : "json_extract(doc, '$.sig')";
    return (yield* this.q.value(`SELECT ${sig} FROM votes WHERE voter = ? AND item_id = ? AND value = ? AND phase = ?`, vote.voter, vote.item, vote.value, vote.phase)) as string | undefined;
  }

  /** How many other documents are kept for the statement's key. */
  *otherDocumentCount(vote: { voter: string; item: string; value: string; phase: string }): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM vote_documents WHERE voter = ? AND item_id = ? AND value = ? AND phase = ?', vote.voter, vote.item, vote.value, vote.phase);
  }

  /** Keeps another document of a stored statement; false when that signature is kept already. */
  *insertOtherDocument(vote: { voter: string; item: string; value: string; phase: string; sig: string }, doc: string, origin: string | null, nowMs: number): Steps<boolean> {
    return (
      (yield* this.q.run('INSERT INTO vote_documents (voter, item_id, value, phase, sig, doc, origin, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING', vote.voter, vote.item, vote.value, vote.phase, vote.sig, doc, origin, nowMs)) > 0
    );
  }

  /** The other documents kept about an item, in the order they were stored. */
  *otherDocumentsOf(itemId: string): Steps<string[]> {
    return (yield* this.q.values('SELECT doc FROM vote_documents WHERE item_id = ? ORDER BY created_ms, voter, value, phase, sig', itemId)) as string[];
  }

  /** Whether the voter signed any statement about the item. */
  *hasAnyBy(voter: string, itemId: string): Steps<boolean> {
    return (yield* this.q.get('SELECT 1 FROM votes WHERE voter = ? AND item_id = ? LIMIT 1', voter, itemId)) !== undefined;
  }

  /** Items with an accept or confirm statement and no statement by `nodeId`. */
  *itemsAcceptedWithout(nodeId: string): Steps<string[]> {
    return (yield* this.q.values("SELECT DISTINCT item_id FROM votes WHERE phase != 'vote' AND item_id NOT IN (SELECT item_id FROM votes WHERE voter = ?) ORDER BY item_id", nodeId)) as string[];
  }

  *has(voter: string, itemId: string, value: string, phase: string): Steps<boolean> {
    return (yield* this.q.get('SELECT 1 FROM votes WHERE voter = ? AND item_id = ? AND value = ? AND phase = ?', voter, itemId, value, phase)) !== undefined;
  }

  /** The keys of every statement about an item, in storage order. */
  *keysOf(itemId: string): Steps<StatementKey[]> {
    return (yield* this.q.all('SELECT created_ms AS "createdMs", voter, value, phase FROM votes WHERE item_id = ? ORDER BY created_ms, voter, value, phase', itemId)) as StatementKey[];
  }

  /** The stored text of one statement. */
  *docOf(itemId: string, key: Omit<StatementKey, 'createdMs'>): Steps<string> {
    return (yield* this.q.value('SELECT doc FROM votes WHERE voter = ? AND item_id = ? AND value = ? AND phase = ?', key.voter, itemId, key.value, key.phase)) as string;
  }

  *countByVoter(voter: string): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM votes WHERE voter = ?', voter);
  }

  /** Walks the table: tests check the kept counts against it; a request reads RelayCountRepository (decision 1100). */
  *count(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM votes');
  }

  *floorOf(itemId: string, nodeId: string): Steps<Floor | undefined> {
    return (yield* this.q.get('SELECT state, value, accepted_via AS "acceptedVia" FROM bulletin_floors WHERE item_id = ? AND node_id = ?', itemId, nodeId)) as Floor | undefined;
  }

  *setFloor(itemId: string, nodeId: string, floor: Floor, nowMs: number): Steps<void> {
    yield* this.q.run('INSERT INTO bulletin_floors (item_id, node_id, state, value, accepted_via, updated_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id, node_id) DO UPDATE SET state = excluded.state, value = excluded.value, accepted_via = excluded.accepted_via, updated_ms = excluded.updated_ms', itemId, nodeId, floor.state, floor.value, floor.acceptedVia, nowMs);
  }
}
