import { isItemId } from '../../../core/relay/claim.js';
import { isNodeId } from '../../../core/relay/node-id.js';
import type { Problem } from '../../../core/relay/problem.js';
import { invalidInputAt } from './relay-errors.js';

/** What a path parameter must be: an item id, or a node id (64 lowercase hex characters). */
export type PathIdKind = 'item' | 'node';

const pathIdChecks: Record<PathIdKind, { valid: (value: string) => boolean; code: Problem['code'] }> = {
  item: { valid: isItemId, code: 'not_item_id' },
  node: { valid: isNodeId, code: 'not_node_id' },
};

/**
 * Refuses the path parameters (`[field, kind, value]`, in the route's order) that are malformed, every
 * one of them in one answer: FastAPI checks all path parameters before the handler runs and lists
 * each failure (a route with two bad ones answers both). Checked before anything is looked up.
 */
export function requirePathIds(params: readonly (readonly [field: string, kind: PathIdKind, value: string])[]): void {
  const problems: Problem[] = [];
  for (const [field, kind, value] of params) {
    const check = pathIdChecks[kind];
    if (!check.valid(value)) problems.push({ path: [field], code: check.code, input: value });
  }
  if (problems.length > 0) throw invalidInputAt(['path'], problems);
}

/** Refuses a path parameter (`field`, `id` unless named) that is no item id; checked before anything is looked up. */
export function requireItemId(id: string, field = 'id'): void {
  requirePathIds([[field, 'item', id]]);
}

/** Refuses a path parameter `field` that is no node id (64 lowercase hex characters). */
export function requireNodeId(id: string, field: string): void {
  requirePathIds([[field, 'node', id]]);
}
