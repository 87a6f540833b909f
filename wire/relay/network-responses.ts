import { z } from 'zod';
import { sliceDeclarationDoc } from './relay-schemas.js';
import { itemSummarySchema } from './item-responses.js';
import { count, isoTime, itemId, nodeId, openObject, quorumSet, sha256 } from './response-fields.js';

/**
 * Success answers of the network routes (server/relay network-routes.ts): health, the event feed
 * peers pull, peers and federation, the network view and worked examples.
 *
 * For /openapi.json (each route names its schema as `response`). Strict at the top level:
 * test/integration/relay-request-and-response-schemas.test.ts and
 * test/integration/relay-every-route-answer-schema.test.ts parse real answers with them, so a field
 * added to a handler without its schema fails there instead of going undocumented. Documents a
 * client passes through unchanged (examples, exports) stay open inside.
 */

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

const peerView = z
  .strictObject({
    url: z.string(),
    node_id: nodeId.nullable(),
    version: z.string().nullable(),
    reachable: z.boolean().nullable().meta({ description: 'null until probed' }),
    last_probe_at: isoTime.nullable(),
    last_error: z.string().nullable(),
    cursor: count.meta({ description: "the peer's feed seq pulled up to" }),
    pulled_events: count,
    rejected_events: count,
    offences: count.meta({ description: 'documents it served that failed verification since it was last added (forged signatures, mismatched ids or hashes, unknown authors); see Federation, "Standing"' }),
    last_offence: z.string().nullable(),
    suspended_at: isoTime.nullable().meta({ description: 'when it passed the offence bound; a suspended peer is not pulled from until an operator adds it again with POST /reach' }),
    added_at: isoTime,
  })
  .meta({ id: 'Peer' });

export const peerAddedSchema = peerView.extend({ created: z.boolean() }).meta({ id: 'PeerAdded' });

export const peersSchema = z.strictObject({ peers: z.array(peerView) }).meta({ id: 'Peers' });

export const relaysSchema = z
  .strictObject({ self: z.strictObject({ url: z.string(), node_id: nodeId }), relays: z.array(z.strictObject({ url: z.string(), node_id: nodeId.nullable(), version: z.string().nullable() })) })
  .meta({ id: 'Relays' });

export const seedsSchema = z.strictObject({ seeds: z.array(z.strictObject({ url: z.string() })), self: z.strictObject({ url: z.string(), node_id: nodeId }) }).meta({ id: 'Seeds' });

const probeResult = {
  url: z.string(),
  reachable: z.boolean(),
  node_id: nodeId.nullable(),
  version: z.string().nullable(),
  pulled: count.meta({ description: 'events verified and stored' }),
  rejected: count.meta({ description: 'events refused (failed verification)' }),
  cursor: count,
  caught_up: z.boolean().meta({ description: "the peer's feed was read to its end" }),
  error: z.string().nullable(),
};

export const probeSchema = z.strictObject({ results: z.array(z.strictObject(probeResult)) }).meta({ id: 'ProbeResults' });

export const pullSchema = z
  .strictObject({ results: z.array(z.strictObject({ ...probeResult, probes: count.meta({ description: 'probes it took' }) })), pulled: count, caught_up: z.boolean() })
  .meta({ id: 'PullResults' });

export const networkSchema = z
  .strictObject({
    relay: z.strictObject({ url: z.string(), node_id: nodeId, slice: quorumSet.nullable().meta({ description: "the relay node's own slice; null when it has none" }) }),
    counts: z.strictObject({ nodes: count, nodes_registered_here: count, items: count, votes: count, events: count, peers: count }),
    peers: z.array(peerView),
    slices: z.array(z.strictObject({ node_id: nodeId, slice_hash: sha256, slice: quorumSet })),
    pairs: z.array(z.tuple([nodeId, nodeId])),
  })
  .meta({ id: 'Network' });

export const examplesSchema = z
  .strictObject({ claim: openObject, registration: openObject, vote: openObject, slice: openObject, declaration: openObject })
  .meta({ id: 'Examples', description: 'Worked requests (method, path, body) made with a throwaway key; they verify.' });
