import { z } from 'zod';
import { itemAuthorshipDoc, reportReasons } from './relay-schemas.js';
import { count, isoTime, itemId, nodeId, quorumSet, sha256 } from './response-fields.js';

/**
 * Success answers of the item routes (server/relay item-routes.ts): items, their votes and
 * bulletins, published slices and reports.
 *
 * For /openapi.json (each route names its schema as `response`). Strict at the top level:
 * test/integration/relay-request-and-response-schemas.test.ts and
 * test/integration/relay-every-route-answer-schema.test.ts parse real answers with them, so a field
 * added to a handler without its schema fails there instead of going undocumented. Documents a
 * client passes through unchanged (examples, exports) stay open inside.
 */

const phaseCounts = z.strictObject({ vote: count, accept: count, confirm: count });

export const voteCountsSchema = z.strictObject({ yes: phaseCounts, no: phaseCounts }).meta({ id: 'VoteCounts', description: 'Distinct voters per value and phase.' });

export const bulletinSchema = z
  .strictObject({
    item: itemId,
    node: nodeId,
    state: z.enum(['uncommitted', 'voted', 'accepted', 'confirmed', 'conflicted']),
    value: z.enum(['yes', 'no']).nullable(),
    counts: voteCountsSchema,
    accepted_via: z.enum(['quorum', 'v-blocking']).nullable(),
    equivocators: z.array(nodeId).meta({ description: 'voters that signed both values in one phase, sorted' }),
    slice_changers: z.array(nodeId).meta({ description: "voters whose statements carry more than one slice, sorted; only the first statement's slice counts" }),
    slice_hash: z.string().nullable(),
    to_emit: z.array(z.strictObject({ value: z.enum(['yes', 'no']), phase: z.enum(['accept', 'confirm']) })),
  })
  .meta({ id: 'Bulletin', description: "A node's scp-s5 bulletin for an item; its rank never goes down." });

const itemBase = {
  id: itemId,
  kind: z.string(),
  title: z.string(),
  author: nodeId,
  origin: z.string().nullable().meta({ description: 'the peer relay it was pulled from; null when posted here' }),
  created_at: isoTime,
  authorship: itemAuthorshipDoc.nullable().meta({ description: "the author's signed x.item/1 statement; null when posted without one (such items stay on the relay they were posted to)" }),
};

const claimItem = z.strictObject({ ...itemBase, type: z.literal('claim'), body: z.string() });

const fileItem = z.strictObject({ ...itemBase, type: z.literal('file'), bytes: count.nullable(), media_type: z.string().nullable() });

export const itemSummarySchema = z.discriminatedUnion('type', [claimItem, fileItem]).meta({ id: 'Item' });

export const itemsPageSchema = z
  .strictObject({ items: z.array(itemSummarySchema), next: z.number().int().nullable().meta({ description: 'pass as after for the next page; null on the last' }) })
  .meta({ id: 'ItemsPage' });

const itemDetails = { counts: voteCountsSchema, reports: count, relay_bulletin: bulletinSchema };

export const itemDetailSchema = z
  .discriminatedUnion('type', [claimItem.extend(itemDetails), fileItem.extend(itemDetails)])
  .meta({ id: 'ItemDetail', description: "An item with its vote counts, report count and this relay node's bulletin." });

export const itemCreatedSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ id: itemId, type: z.literal('claim'), kind: z.string(), title: z.string(), author: nodeId, origin: z.string().nullable(), created_at: isoTime, authorship: itemAuthorshipDoc.nullable(), body: z.string(), created: z.boolean() }),
    z.strictObject({ id: itemId, type: z.literal('file'), kind: z.string(), title: z.string(), author: nodeId, origin: z.string().nullable(), created_at: isoTime, authorship: itemAuthorshipDoc.nullable(), bytes: count.nullable(), media_type: z.string().nullable(), created: z.boolean() }),
  ])
  .meta({ id: 'ItemCreated', description: 'created false (200) when the same content was already stored' });

export const voteAnswerSchema = z
  .strictObject({
    item: itemId,
    voter: nodeId,
    value: z.enum(['yes', 'no']),
    phase: z.enum(['vote', 'accept', 'confirm']),
    stored: z.boolean().meta({ description: 'true (201) for a new statement; false (200) for a duplicate' }),
    duplicate: z.boolean().meta({ description: 'the same (voter, item, value, phase) was already stored; the first one is kept' }),
    equivocation: z.boolean().meta({ description: 'the voter has now signed both values in this phase (both kept as evidence)' }),
    relay_emitted: z.array(z.strictObject({ value: z.enum(['yes', 'no']), phase: z.enum(['accept', 'confirm']) })).meta({ description: "statements the relay node signed because of this one" }),
    relay_bulletin: bulletinSchema,
  })
  .meta({ id: 'VoteAnswer' });

export const sliceAnswerSchema = z
  .strictObject({ node_id: nodeId, slice_hash: sha256, slice: quorumSet, t_auto: z.boolean().meta({ description: 't follows the default threshold as entries change' }) })
  .meta({ id: 'SlicePublished' });

const reason = z.enum(reportReasons);

export const reportSchema = z.strictObject({ item: itemId, reporter: nodeId, reason, note: z.string(), created_at: isoTime }).meta({ id: 'Report' });

export const reportsSchema = z
  .strictObject({ reports: z.array(z.strictObject({ item: itemId, reason, note: z.string(), bot_id: z.string().nullable(), created_at: isoTime })) })
  .meta({ id: 'Reports' });
