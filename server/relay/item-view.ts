import { isoFromMs } from '../../core/clock.js';
import type { ItemRow } from './data-access/item-repository.js';
import type { RelayBulletin } from './voting.js';

/**
 * How the relay shows an item and a bulletin: to clients (GET /items, /items/{id}, a bulletin) and
 * in the `item` events peers pull. Views only shape what they are given; they read nothing.
 */

/**
 * The JSON face of an item (claims carry their text; files their size and type), with the author's
 * signed x.item/1 statement when there is one: what peers verify the authorship with.
 */
export function itemView(row: ItemRow, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const authorship = row.authorship === null ? null : (JSON.parse(row.authorship) as unknown);
  const base = { id: row.item_id, type: row.type, kind: row.kind, title: row.title, author: row.author, origin: row.origin, created_at: isoFromMs(row.created_ms), authorship };
  return row.type === 'claim' ? { ...base, body: row.body, ...extra } : { ...base, bytes: row.file_bytes, media_type: row.media_type, ...extra };
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
