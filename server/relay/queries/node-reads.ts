import type { KnownCaller } from '../domain/credentials.js';
import { requireNodeId } from '../domain/id-checks.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import type { PublishedSlice } from '../domain/slice-book.js';
import type { RelayDeps } from '../relay-deps.js';
import type { BotRow } from '../../storage/relay/bot-repository.js';
import type { ItemRow } from '../../storage/relay/item-repository.js';
import type { NodeRow } from '../../storage/relay/node-repository.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/** GET /nodes lists the oldest nodes, at most this many. */
export const nodesListedMax = 500;

/** A node as its owner sees it: its row, its verified phone number and whom it paired with. */
export interface OwnNode {
  row: NodeRow;
  phone: string | null;
  pairedWith: string[];
}

/** What GET /nodes/{id} shows of a node beside its public face. */
export interface NodeDetail {
  row: NodeRow;
  slice: PublishedSlice | undefined;
  pairedWith: string[];
  counts: { items: number; votes: number };
}

/** Everything a node owns on this relay (GET /me/export), read at `nowMs`. */
export interface NodeExport {
  nowMs: number;
  row: NodeRow;
  phone: string | null;
  rows: Awaited<ReturnType<RelayDeps['store']['plainData']['exports']['rowsOf']>>;
  slice: PublishedSlice | undefined;
}

/**
 * What may be read of nodes and their bots: the caller itself (GET /me, /me/export, /bots/me),
 * the nodes this relay knows (GET /nodes, /nodes/{id}) and the directory (GET /search). Each
 * returns data; routes shape it with the views of views/node-view.ts.
 */
export class NodeReads {
  constructor(private readonly deps: RelayDeps) {}

  /** The calling node, and for a human its active bots (a bot sees the node it acts for, not its siblings). */
  async caller(caller: KnownCaller): Promise<{ own: OwnNode; bots: Omit<BotRow, 'owner'>[] | null }> {
    const own = await this.own(caller.nodeId);
    return { own, bots: caller.kind === 'bot' ? null : await this.deps.store.plainData.bots.activeOf(caller.nodeId) };
  }

  /** A node registered here as its owner sees it. */
  async own(nodeId: string): Promise<OwnNode> {
    const plain = this.deps.store.plainData;
    // The caller's credential proved the node is registered here.
    const row = (await plain.nodes.get(nodeId))!;
    const phone = await plain.phones.ofNode(nodeId);
    return { row, phone: phone?.phone ?? null, pairedWith: await plain.social.pairedWith(nodeId) };
  }

  /** The bot `botId` (its credential proved it exists). */
  async bot(botId: string): Promise<BotRow> {
    return (await this.deps.store.plainData.bots.get(botId))!;
  }

  /** The oldest nodes (at most `nodesListedMax`), how many there are, and whether the list stops short. */
  async list(): Promise<{ rows: NodeRow[]; total: number; truncated: boolean }> {
    const plain = this.deps.store.plainData;
    const rows = await plain.nodes.oldest(nodesListedMax + 1);
    const total = await plain.counts.nodes();
    return { rows: rows.slice(0, nodesListedMax), total, truncated: rows.length > nodesListedMax };
  }

  /** The node `id`; refused when the id is malformed or the node unknown here. */
  async detail(id: string): Promise<NodeDetail> {
    requireNodeId(id, 'id');
    const plain = this.deps.store.plainData;
    const row = await plain.nodes.get(id);
    if (!row) throw new RelayRefusal('node_not_found', 'no such node on this relay');
    const slice = await this.deps.store.plain(this.deps.voting.publishedSlice(id));
    const counts = { items: await plain.items.countByAuthor(id), votes: await plain.votes.countByVoter(id) };
    return { row, slice, pairedWith: await plain.social.pairedWith(id), counts };
  }

  /** Listed nodes (by name and about) and items (by title) matching `q`, at most `searchResultsMax` of each. */
  async search(q: string): Promise<{ nodes: NodeRow[]; items: Pick<ItemRow, 'item_id' | 'type' | 'kind' | 'title' | 'author' | 'created_ms'>[] }> {
    const plain = this.deps.store.plainData;
    // `q` is text to find, not a pattern: LIKE's own characters are escaped.
    const like = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const nodes = await plain.nodes.searchListed(like, relayLimits.searchResultsMax);
    return { nodes, items: await plain.items.searchTitles(like, relayLimits.searchResultsMax) };
  }

  /** Every row `nodeId` owns, credentials excluded (bots by id and name only). */
  async exportOf(nodeId: string): Promise<NodeExport> {
    const plain = this.deps.store.plainData;
    const phone = (await plain.phones.ofNode(nodeId))?.phone ?? null;
    const row = (await plain.nodes.get(nodeId))!;
    const rows = await plain.exports.rowsOf(nodeId);
    const nowMs = this.deps.clock.nowMs();
    return { nowMs, row, phone, rows, slice: await this.deps.store.plain(this.deps.voting.publishedSlice(nodeId)) };
  }
}
