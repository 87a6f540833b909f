import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

/** Verified phone numbers: one node per number, one number per node. */
export class PhoneRepository {
  constructor(private readonly q: RelaySql) {}

  *ofNode(nodeId: string): Steps<{ phone: string; verified_ms: number } | undefined> {
    return (yield* this.q.get('SELECT phone, verified_ms FROM phones WHERE node_id = ?', nodeId)) as { phone: string; verified_ms: number } | undefined;
  }

  /** The node that verified `phone`, or null. */
  *nodeOf(phone: string): Steps<string | null> {
    return ((yield* this.q.get('SELECT node_id FROM phones WHERE phone = ?', phone)) as { node_id: string } | undefined)?.node_id ?? null;
  }

  /** Gives `phone` to `nodeId`, taking it from any other node and replacing the node's earlier number. Call inside a transaction. */
  *assign(phone: string, nodeId: string, nowMs: number): Steps<void> {
    yield* this.q.run('DELETE FROM phones WHERE phone = ? OR node_id = ?', phone, nodeId);
    yield* this.q.run('INSERT INTO phones (phone, node_id, verified_ms) VALUES (?, ?, ?)', phone, nodeId, nowMs);
  }

  /** Nodes holding `phone` that opted in to be found by it. */
  *discoverableNodes(phone: string): Steps<string[]> {
    return (yield* this.q.values('SELECT n.node_id FROM phones p JOIN nodes n ON n.node_id = p.node_id WHERE p.phone = ? AND n.phone_discoverable = 1', phone)) as string[];
  }
}
