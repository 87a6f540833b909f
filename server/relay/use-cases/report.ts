import type { RelayDeps } from '../relay-deps.js';
import { ItemReads } from '../queries/item-reads.js';

/** A report as stored: one per node and item. */
export interface FiledReport {
  item: string;
  reporter: string;
  reason: string;
  note: string;
  createdMs: number;
}

/** POST /items/{id}/report: a node reports an item on this relay; reporting it again replaces the report. */
export class Report {
  private readonly items: ItemReads;

  constructor(private readonly deps: RelayDeps) {
    this.items = new ItemReads(deps);
  }

  /** `reporter` (through `botId` when a bot acts for it) reports the item `itemId`. */
  async file(reporter: string, botId: string | null, itemId: string, report: { reason: string; note: string }): Promise<FiledReport> {
    const row = await this.items.item(itemId);
    const nowMs = () => this.deps.clock.nowMs();
    await this.deps.store.plainData.reports.upsert({ item_id: row.item_id, reporter, bot_id: botId, reason: report.reason, note: report.note, created_ms: nowMs() });
    return { item: row.item_id, reporter, reason: report.reason, note: report.note, createdMs: nowMs() };
  }
}
