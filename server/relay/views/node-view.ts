import { isoFromMs } from '../../../core/clock.js';
import type { NodeRow } from '../../storage/relay/node-repository.js';
import type { RelayDeps } from '../relay-deps.js';

export type { NodeRow };

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
