import { isoFromMs } from '../../../core/clock.js';
import { maskPhone } from '../domain/phone-codes.js';
import type { PublishedSlice } from '../domain/slice-book.js';
import type { BotRow } from '../../storage/relay/bot-repository.js';
import type { NodeRow } from '../../storage/relay/node-repository.js';

/**
 * How answers show a node and its bots (GET /nodes, /nodes/{id}, /me, /me/export, /search,
 * /bots/me). Views only shape what they are given; they read nothing. `relayNodeId` is this
 * relay's own node, which answers mark as `relay_node`.
 */

/** The public face of a node: what anyone may see at /nodes and /nodes/{id}. */
export function publicNode(row: NodeRow, relayNodeId: string): Record<string, unknown> {
  return {
    node_id: row.node_id,
    name: row.name,
    about: row.about,
    registered_here: row.local === 1,
    relay_node: row.node_id === relayNodeId,
    origin: row.origin,
    invited_by: row.invited_by,
    listed: row.listed === 1,
    created_at: isoFromMs(row.created_ms),
  };
}

/** A node as its owner sees it (GET and POST /me): its public face, its masked phone number, its settings and pairs. */
export function ownNodeView(own: { row: NodeRow; phone: string | null; pairedWith: string[] }, relayNodeId: string): Record<string, unknown> {
  return {
    ...publicNode(own.row, relayNodeId),
    phone: own.phone ? maskPhone(own.phone) : null,
    phone_discoverable: own.row.phone_discoverable === 1,
    credential_version: own.row.cred_version,
    paired_with: own.pairedWith,
  };
}

/** GET /nodes/{id}: the public face, the published slice, the pairs and the activity counts. */
export function nodeDetailView(
  detail: { row: NodeRow; slice: PublishedSlice | undefined; pairedWith: string[]; counts: { items: number; votes: number } },
  relayNodeId: string,
): Record<string, unknown> {
  const slice = detail.slice ? { hash: detail.slice.hash, quorum_set: detail.slice.qset } : null;
  return { ...publicNode(detail.row, relayNodeId), slice, paired_with: detail.pairedWith, counts: detail.counts };
}

/** A bot among its owner's (GET /me): no owner field, whatever columns the row was read with. */
export function botView(bot: Omit<BotRow, 'owner'>): Record<string, unknown> {
  return { bot_id: bot.bot_id, name: bot.name, created_at: isoFromMs(bot.created_ms) };
}

/** The calling bot (GET /bots/me): with the node it acts for. */
export function botWithOwnerView(bot: BotRow): Record<string, unknown> {
  return { bot_id: bot.bot_id, name: bot.name, owner: bot.owner, created_at: isoFromMs(bot.created_ms) };
}

/** GET /me/export: every row the node owns, credentials excluded; stored documents as the JSON they are. */
export function nodeExportView(
  exported: {
    nowMs: number;
    row: NodeRow;
    phone: string | null;
    rows: { items: unknown[]; voteDocs: string[]; bots: unknown[]; invites: unknown[]; pairings: unknown[]; reports: unknown[]; events: unknown[] };
    slice: PublishedSlice | undefined;
  },
  relay: { baseUrl: string; relayNodeId: string },
): Record<string, unknown> {
  const { row, rows } = exported;
  return {
    exported_at: isoFromMs(exported.nowMs),
    relay: relay.baseUrl,
    node: {
      ...publicNode(row, relay.relayNodeId),
      about: row.about,
      phone: exported.phone,
      phone_discoverable: row.phone_discoverable === 1,
      credential_version: row.cred_version,
      registration: JSON.parse(row.registration) as unknown,
    },
    items: rows.items,
    votes: rows.voteDocs.map((doc) => JSON.parse(doc) as unknown),
    slice: exported.slice ?? null,
    bots: rows.bots,
    invites: rows.invites,
    pairings: rows.pairings,
    reports: rows.reports,
    events: rows.events,
  };
}
