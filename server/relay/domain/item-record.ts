import { isoFromMs } from '../../../core/clock.js';
import type { ItemRow } from '../../storage/relay/item-repository.js';

/**
 * The JSON face of an item (claims carry their text; files their size and type), with the author's
 * signed x.item/1 statement when there is one: what peers verify the authorship with. It is the
 * domain's record of the item in the event feed (`item` events, stored and pulled by peers), and
 * the base of every answer that shows an item (item-view.ts).
 */
export function itemRecord(row: ItemRow): Record<string, unknown> {
  const authorship = row.authorship === null ? null : (JSON.parse(row.authorship) as unknown);
  const base = { id: row.item_id, type: row.type, kind: row.kind, title: row.title, author: row.author, origin: row.origin, created_at: isoFromMs(row.created_ms), authorship };
  return row.type === 'claim' ? { ...base, body: row.body } : { ...base, bytes: row.file_bytes, media_type: row.media_type };
}
