import { z } from 'zod';
import { isoTime, nodeId } from './response-fields.js';

/**
 * Success answers of the social routes (server/relay social-routes.ts): invites and pairing.
 *
 * For /openapi.json (each route names its schema as `response`). Strict at the top level:
 * test/integration/relay-request-and-response-schemas.test.ts and
 * test/integration/relay-every-route-answer-schema.test.ts parse real answers with them, so a field
 * added to a handler without its schema fails there instead of going undocumented. Documents a
 * client passes through unchanged (examples, exports) stay open inside.
 */

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
