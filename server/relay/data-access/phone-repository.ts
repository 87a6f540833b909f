import type { PreparedStatements } from './prepared-statements.js';

/** Verified phone numbers: one node per number, one number per node. */
export class PhoneRepository {
  constructor(private readonly q: PreparedStatements) {}

  ofNode(nodeId: string): { phone: string; verified_ms: number } | undefined {
    return this.q.sql('SELECT phone, verified_ms FROM phones WHERE node_id = ?').get(nodeId) as { phone: string; verified_ms: number } | undefined;
  }

  /** The node that verified `phone`, or null. */
  nodeOf(phone: string): string | null {
    return (this.q.sql('SELECT node_id FROM phones WHERE phone = ?').get(phone) as { node_id: string } | undefined)?.node_id ?? null;
  }

  /** Gives `phone` to `nodeId`, taking it from any other node and replacing the node's earlier number. Call inside a transaction. */
  assign(phone: string, nodeId: string, nowMs: number): void {
    this.q.sql('DELETE FROM phones WHERE phone = ? OR node_id = ?').run(phone, nodeId);
    this.q.sql('INSERT INTO phones (phone, node_id, verified_ms) VALUES (?, ?, ?)').run(phone, nodeId, nowMs);
  }

  /** Nodes holding `phone` that opted in to be found by it. */
  discoverableNodes(phone: string): string[] {
    return this.q
      .sql('SELECT n.node_id FROM phones p JOIN nodes n ON n.node_id = p.node_id WHERE p.phone = ? AND n.phone_discoverable = 1')
      .pluck()
      .all(phone) as string[];
  }
}
