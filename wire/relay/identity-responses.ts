import { z } from 'zod';
import { count, isoTime, itemId, nodeId, openObject, quorumSet, sha256 } from './response-fields.js';

/**
 * Success answers of the identity routes (server/relay identity-routes.ts): nodes, credentials,
 * phone codes and lookup, bots, the directory, search and a node's export.
 *
 * For /openapi.json (each route names its schema as `response`). Strict at the top level:
 * test/integration/relay-request-and-response-schemas.test.ts and
 * test/integration/relay-every-route-answer-schema.test.ts parse real answers with them, so a field
 * added to a handler without its schema fails there instead of going undocumented. Documents a
 * client passes through unchanged (examples, exports) stay open inside.
 */

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
