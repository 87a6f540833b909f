import { z } from 'zod';
import { itemAuthorshipDoc, sliceDeclarationDoc } from './relay-schemas.js';

/**
 * Success answers of the main relay routes, for /openapi.json (each route names its schema as
 * `response`). Strict objects: test/integration/relay-request-and-response-schemas.test.ts parses real answers
 * with them, so a field added to a handler without its schema fails that test instead of going
 * undocumented.
 */

const nodeId = z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'Ed25519 public key, 64 lowercase hex characters' });
const itemId = z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'SHA-256, 64 lowercase hex characters' });
const isoTime = z.string().meta({ description: 'ISO 8601 UTC time' });
const count = z.number().int().nonnegative();

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

const signedRegistration = z
  .object({ schema: z.literal('x.register/1'), node_id: nodeId, relay: z.string(), created_at: z.number().int(), name: z.string().optional(), sig: z.string() })
  .meta({ id: 'SignedRegistration', description: 'the x.register/1 document as signed (verify it as POST /register does)' });
const signedVote = z
  .object({
    schema: z.literal('x.vote/1'),
    scheme: z.literal('scp-s5'),
    item: itemId,
    voter: nodeId,
    value: z.enum(['yes', 'no']),
    phase: z.enum(['vote', 'accept', 'confirm']),
    slice: z.unknown().optional(),
    slice_hash: z.string().optional(),
    created_at: z.number().int(),
    sig: z.string(),
    hint: z.unknown().optional(),
  })
  .meta({ id: 'SignedVote', description: 'the x.vote/1 statement as received (docs/scp-s5.md)' });
/** What each event kind carries (docs/relay-api.md, "Events"). */
export const eventDataSchema = z
  .union([
    z.strictObject({ registration: signedRegistration }).meta({ description: 'kind node' }),
    z.strictObject({ item: itemSummarySchema }).meta({ description: 'kind item: the item without counts' }),
    z
      .strictObject({
        vote: signedVote,
        slice: z.unknown().optional().meta({ description: 'for a statement naming its slice by slice_hash: that quorum set, so a peer can resolve the hash (it checks the hash)' }),
      })
      .meta({ description: 'kind vote' }),
    z
      .strictObject({
        node_id: nodeId,
        slice: z.unknown(),
        slice_hash: z.string(),
        updated_ms: z.number().int().meta({ description: 'declaration time, Unix ms; the newest wins between relays' }),
        declaration: sliceDeclarationDoc.nullable().meta({ description: "the node's signed x.slice/1 declaration; null when published here with a credential only (peers do not take it)" }),
      })
      .meta({ description: 'kind slice: a published slice declaration' }),
  ])
  .meta({ id: 'EventData' });

export const eventsPageSchema = z
  .strictObject({
    events: z.array(
      z.strictObject({
        seq: z.number().int().positive(),
        kind: z.enum(['node', 'item', 'vote', 'slice']),
        author: nodeId,
        subject: z.string().meta({ description: 'node: the node id; item and vote: the item id; slice: the slice_hash' }),
        origin: z.string().nullable().meta({ description: 'the peer relay it was pulled from; null when it happened here' }),
        created_at: isoTime,
        data: eventDataSchema,
      }),
    ),
    next: z.number().int().nonnegative(),
    has_more: z.boolean(),
  })
  .meta({ id: 'EventsPage' });

const publicNodeShape = {
  node_id: nodeId,
  name: z.string(),
  about: z.string(),
  registered_here: z.boolean(),
  relay_node: z.boolean(),
  origin: z.string().nullable(),
  invited_by: nodeId.nullable(),
  listed: z.boolean(),
  created_at: isoTime,
};
export const publicNodeSchema = z.strictObject(publicNodeShape).meta({ id: 'Node' });

export const nodesPageSchema = z
  .strictObject({ nodes: z.array(publicNodeSchema), total: count, truncated: z.boolean().meta({ description: 'more than 500 nodes: only the oldest 500 are listed' }) })
  .meta({ id: 'NodesPage' });

export const meNodeSchema = z
  .strictObject({ ...publicNodeShape, phone: z.string().nullable().meta({ description: 'masked' }), phone_discoverable: z.boolean(), credential_version: z.number().int().positive(), paired_with: z.array(nodeId) })
  .meta({ id: 'MeNode' });
export const meSchema = z
  .discriminatedUnion('caller', [
    z.strictObject({ caller: z.literal('human'), node: meNodeSchema, bots: z.array(z.strictObject({ bot_id: z.string(), name: z.string(), created_at: isoTime })) }),
    z.strictObject({ caller: z.literal('bot'), bot_id: z.string(), node: meNodeSchema }),
  ])
  .meta({ id: 'Me' });

export const healthSchema = z
  .strictObject({
    status: z.literal('ok'),
    version: z.string(),
    protocol: z.string(),
    scheme: z.string(),
    schemas: z.strictObject({ claim: z.string(), vote: z.string(), register: z.string(), session: z.string() }),
    node_id: nodeId,
    base_url: z.string(),
    time: isoTime,
    claim_kinds: z.array(z.string()),
    limits: z.record(z.string(), z.number()),
    credentials: z.strictObject({ human: z.string(), bot: z.string() }),
    pages: z.record(z.string(), z.string()),
    openapi: z.string(),
  })
  .meta({ id: 'Health' });
