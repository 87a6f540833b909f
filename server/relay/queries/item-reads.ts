import type { Readable } from 'node:stream';
import type { RelayDeps } from '../relay-deps.js';
import { requireItemId, requirePathIds } from '../domain/id-checks.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import type { RelayBulletin } from '../domain/voting.js';
import type { ItemRow, ReportRow } from '../../storage/relay/item-repository.js';

/** Items newest first (GET /items), 100 per page unless asked, at most 500. */
const itemsPageDefault = 100;
const itemsPageMax = 500;

/**
 * What anyone may read of items: pages of them, one item with its tallies or its bytes, a node's
 * bulletin for an item, and a node's reports (GET /items, /items/{id}, /items/{id}/bulletin/{node},
 * /report). Each returns data; routes shape it with a view.
 */
export class ItemReads {
  constructor(private readonly deps: RelayDeps) {}

  /** A page of items newest first; `next` is the cursor of the page after, null on the last. */
  async page(query: { after?: string | undefined; limit?: string | undefined; author?: string | undefined }): Promise<{ rows: ItemRow[]; next: number | null }> {
    // A limit of 0 (or none) is the default, not an empty page.
    const limit = Math.min(Number(query.limit ?? itemsPageDefault) || itemsPageDefault, itemsPageMax);
    const after = query.after === undefined ? Number.MAX_SAFE_INTEGER : Number(query.after);
    const rows = await this.deps.store.plainData.items.page(after, query.author || undefined, limit);
    const last = rows.at(-1);
    return { rows, next: rows.length === limit && last ? last.cursor : null };
  }

  /** The item `id`; refused when the id is malformed or the item is not on this relay. */
  async item(id: string): Promise<ItemRow> {
    requireItemId(id);
    const row = await this.deps.store.plainData.items.get(id);
    if (!row) throw new RelayRefusal('item_not_found', 'no such item on this relay');
    return row;
  }

  /** What GET /items/{id} adds to an item: this relay's bulletin for it and its report count. */
  async tallies(row: ItemRow): Promise<{ bulletin: RelayBulletin; reports: number }> {
    const bulletin = await this.deps.store.plain(this.deps.voting.bulletin(row.item_id, this.deps.selfKey.nodeId));
    return { bulletin, reports: await this.deps.store.plainData.reports.countForItem(row.item_id) };
  }

  /** A file item's bytes and their length; refused when this relay does not hold them. */
  async fileContent(row: ItemRow): Promise<{ contentLength: number; content: Readable }> {
    const files = this.deps.files;
    if (!(await files.has(row.item_id))) throw new RelayRefusal('file_content_missing', 'file content not stored on this relay');
    // Copied here first when another replica received it (`open` would do it too, after the headers).
    const contentLength = row.file_bytes ?? (await files.sizeOf(row.item_id));
    return { contentLength, content: await files.open(row.item_id) };
  }

  /** `node`'s bulletin for the item `id` as this relay computes it from every stored statement. */
  async bulletin(id: string, node: string): Promise<{ item: ItemRow; bulletin: RelayBulletin }> {
    // Both path parameters before the lookup: a malformed node id is a 422 whether or not the item
    // exists, and two malformed ones are both listed, as FastAPI does.
    requirePathIds([
      ['id', 'item', id],
      ['node', 'node', node],
    ]);
    const item = await this.item(id);
    return { item, bulletin: await this.deps.store.plain(this.deps.voting.bulletin(item.item_id, node)) };
  }

  /** The reports `reporter` made, newest first. */
  reportsOf(reporter: string): Promise<ReportRow[]> {
    return this.deps.store.plainData.reports.byReporter(reporter);
  }
}
