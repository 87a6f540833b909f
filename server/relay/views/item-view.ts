import type { ItemRow } from '../../storage/relay/item-repository.js';
import { itemRecord } from '../domain/item-record.js';
import type { RelayBulletin } from '../domain/voting.js';

/**
 * How the relay shows an item and a bulletin to clients (GET /items, /items/{id}, a bulletin).
 * Views only shape what they are given; they read nothing.
 */

/** An item as an answer shows it: its record (item-record.ts) and what the answer adds (counts, `created`). */
export function itemView(row: ItemRow, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...itemRecord(row), ...extra };
}

/** Wire form of a bulletin (design scp-s5, "Bulletin"). */
export function bulletinView(b: RelayBulletin, node: string, item: string): Record<string, unknown> {
  return {
    item,
    node,
    state: b.state,
    value: b.value,
    counts: b.counts,
    accepted_via: b.accepted_via,
    equivocators: b.equivocators,
    slice_changers: b.sliceChangers,
    slice_hash: b.slice_hash,
    to_emit: b.toEmit,
  };
}
