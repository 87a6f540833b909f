import { z } from 'zod';
import { itemAuthorshipDoc, reportReasons } from './relay-schemas.js';
import { bulletinSchema, publicNodeSchema } from './relay-responses.js';

/**
 * Success answers of the remaining relay routes (the main ones are in relay-responses.ts), so
 * /openapi.json documents every success body. Strict at the top level: a field added to a handler
 * without its schema fails test/integration/relay-every-route-answer-schema.test.ts. Documents a
 * client passes through unchanged (examples, exports) stay open inside.
 */

const nodeId = z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'Ed25519 public key, 64 lowercase hex characters' });
const itemId = z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'SHA-256, 64 lowercase hex characters' });
const isoTime = z.string().meta({ description: 'ISO 8601 UTC time' });
const count = z.number().int().nonnegative();
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const quorumSet: z.ZodType = z.lazy(() => z.strictObject({ t: z.number().int().positive(), v: z.array(nodeId), i: z.array(quorumSet) })).meta({ id: 'QuorumSetOut' });
const openObject = z.record(z.string(), z.unknown());

export const credentialAnswerSchema = z
  .strictObject({
    node_id: nodeId,
    credential: z.string().meta({ description: '<node_id>.<hmac>, 64 hex each' }),
    authorization: z.string().meta({ description: 'the whole Authorization header value: "Bearer " + credential' }),
  })
  .meta({ id: 'Credential', description: 'The human credential of a node (POST /session, POST /login/verify).' });
export const registerAnswerSchema = credentialAnswerSchema
  .extend({ created: z.boolean().meta({ description: 'false when the node was already registered here (200)' }) })
  .meta({ id: 'Registered', description: 'POST /register: 201 with created true for a new node, 200 with created false for a known one.' });
export const recoveredSchema = credentialAnswerSchema
  .extend({ revoked: z.strictObject({ earlier_credentials: z.literal(true), bots: count.meta({ description: 'bot tokens revoked' }) }) })
  .meta({ id: 'Recovered' });

export const codeRequestSchema = z
  .strictObject({ status: z.literal('code_sent'), expires_in_seconds: count, note: z.string() })
  .meta({ id: 'CodeRequested', description: 'Same answer whether or not the number is known (/login, /recover/start).' });
export const phoneVerifiedSchema = z.strictObject({ phone: z.string().meta({ description: 'masked' }), verified: z.literal(true) }).meta({ id: 'PhoneVerified' });
export const lookupSchema = z.strictObject({ phone: z.string().meta({ description: 'E.164' }), nodes: z.array(nodeId) }).meta({ id: 'Lookup' });

export const botCreatedSchema = z
  .strictObject({
    bot_id: z.string(),
    name: z.string(),
    owner: nodeId,
    token: z.string().meta({ description: 'xrb_ + 43 base64url characters; shown once, only its SHA-256 is stored' }),
    authorization: z.string().meta({ description: '"Bot " + token' }),
    created_at: isoTime,
  })
  .meta({ id: 'BotCreated' });
export const botSchema = z.strictObject({ bot_id: z.string(), name: z.string(), owner: nodeId, created_at: isoTime }).meta({ id: 'Bot' });
export const directorySchema = z.strictObject({ node_id: nodeId, listed: z.boolean(), phone_discoverable: z.boolean() }).meta({ id: 'Directory' });

export const searchSchema = z
  .strictObject({
    q: z.string(),
    nodes: z.array(publicNodeSchema),
    items: z.array(z.strictObject({ id: itemId, type: z.enum(['claim', 'file']), kind: z.string(), title: z.string(), author: nodeId, created_at: isoTime })),
  })
  .meta({ id: 'SearchResults' });

export const nodeDetailSchema = publicNodeSchema
  .extend({
    slice: z
      .strictObject({ hash: sha256.meta({ description: 'slice_hash: quorumSetHash of the quorum set' }), quorum_set: quorumSet })
      .nullable()
      .meta({ description: 'the slice the node published (POST /slice or a peer); null when none' }),
    paired_with: z.array(nodeId),
    counts: z.strictObject({ items: count, votes: count }),
  })
  .meta({ id: 'NodeDetail' });

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

const inviteState = z.enum(['open', 'accepted', 'expired']);
export const inviteCreatedSchema = z
  .strictObject({ code: z.string(), inviter: nodeId, state: z.literal('open'), expires_at: isoTime, accept: z.strictObject({ method: z.literal('POST'), path: z.literal('/invites/accept'), body: z.strictObject({ code: z.string() }) }) })
  .meta({ id: 'InviteCreated' });
export const invitesSchema = z
  .strictObject({ invites: z.array(z.strictObject({ code: z.string(), state: inviteState, created_at: isoTime, expires_at: isoTime, accepted_by: nodeId.nullable(), accepted_at: isoTime.nullable() })) })
  .meta({ id: 'Invites' });
export const inviteAcceptedSchema = z.strictObject({ node_id: nodeId, invited_by: nodeId, accepted_at: isoTime }).meta({ id: 'InviteAccepted' });

const pairState = z.enum(['pending', 'paired', 'expired']);
export const pairStartedSchema = z
  .strictObject({ token: z.string(), node_id: nodeId, state: z.literal('pending'), expires_at: isoTime, url: z.string(), qr: z.string().meta({ description: 'GET it for a PNG of url' }) })
  .meta({ id: 'PairStarted' });
export const pairStateSchema = z
  .strictObject({
    state: pairState,
    node_id: nodeId,
    name: z.string(),
    expires_at: isoTime,
    paired_with: nodeId.nullable(),
    confirm: z.strictObject({ method: z.literal('POST'), path: z.literal('/pair/confirm'), body: z.strictObject({ token: z.string() }) }),
  })
  .meta({ id: 'PairState' });
export const pairedSchema = z.strictObject({ state: z.literal('paired'), nodes: z.tuple([nodeId, nodeId]) }).meta({ id: 'Paired' });

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

export const exportSchema = z
  .strictObject({
    exported_at: isoTime,
    relay: z.string(),
    node: openObject,
    items: z.array(openObject),
    votes: z.array(openObject),
    slice: z.strictObject({ hash: sha256, qset: quorumSet, t_auto: z.boolean() }).nullable(),
    bots: z.array(openObject),
    invites: z.array(openObject),
    pairings: z.array(openObject),
    reports: z.array(openObject),
    events: z.array(openObject),
  })
  .meta({ id: 'Export' });
