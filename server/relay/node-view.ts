import { isoFromMs } from '../../core/clock.js';
import type { RelayDeps } from './relay-deps.js';

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

export function getNode(deps: RelayDeps, nodeId: string): NodeRow | undefined {
  return deps.store.db.prepare('SELECT * FROM nodes WHERE node_id = ?').get(nodeId) as NodeRow | undefined;
}

/** The public face of a node: what anyone may see at /nodes and /nodes/{id}. */
export function publicNode(deps: RelayDeps, row: NodeRow): Record<string, unknown> {
  return {
    node_id: row.node_id,
    name: row.name,
    about: row.about,
    registered_here: row.local === 1,
    relay_node: row.node_id === deps.selfKey.nodeId,
    origin: row.origin,
    invited_by: row.invited_by,
    listed: row.listed === 1,
    created_at: isoFromMs(row.created_ms),
  };
}

/** Nodes paired with `nodeId`, both directions. */
export function pairedWith(deps: RelayDeps, nodeId: string): string[] {
  const rows = deps.store.db.prepare('SELECT a, b FROM pairs WHERE a = ? OR b = ? ORDER BY created_ms').all(nodeId, nodeId) as { a: string; b: string }[];
  return rows.map((r) => (r.a === nodeId ? r.b : r.a));
}
