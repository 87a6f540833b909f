import { isItemId } from '../../../core/relay/claim.js';
import { isNodeId } from '../../../core/relay/node-id.js';
import { invalidInputAt } from './relay-errors.js';

/** Refuses a path parameter (`field`, `id` unless named) that is no item id; checked before anything is looked up. */
export function requireItemId(id: string, field = 'id'): void {
  if (!isItemId(id)) throw invalidInputAt(['path', field], [{ path: [], code: 'not_item_id', input: id }]);
}

/** Refuses a path parameter `field` that is no node id (64 lowercase hex characters). */
export function requireNodeId(id: string, field: string): void {
  if (!isNodeId(id)) throw invalidInputAt(['path'], [{ path: [field], code: 'not_node_id', input: id }]);
}
