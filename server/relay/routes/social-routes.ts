import QRCode from 'qrcode';
import { isoFromMs } from '../../../core/clock.js';
import type { RelayDeps } from '../relay-deps.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { inviteAcceptedSchema, inviteCreatedSchema, invitesSchema, pairStartedSchema, pairStateSchema, pairedSchema } from '../../../wire/relay/social-responses.js';
import { type RelayRoute, alreadySent, callerNode, route } from './relay-route.js';
import { inviteAcceptBody, pairConfirmBody } from '../../../wire/relay/relay-schemas.js';
import { SocialReads } from '../queries/social-reads.js';
import { Invite } from '../use-cases/invite.js';
import { Pair } from '../use-cases/pair.js';

/** The PNG QR code of a pairing URL (error correction M: survives a phone camera at an angle). */
export function pairingQrPng(url: string): Promise<Buffer> {
  return QRCode.toBuffer(url, { type: 'png', errorCorrectionLevel: 'M', margin: 2, scale: 6 });
}


/** Invites and pairing. */
export function socialRoutes(deps: RelayDeps): RelayRoute[] {
  const invites = new Invite(deps);
  const reads = new SocialReads(deps);
  const pairing = new Pair(deps);
  const pairUrl = (token: string) => `${deps.baseUrl}/pair/${token}`;

  return [
    route({
      method: 'post',
      path: '/invites',
      summary: `Create a single-use invite code (valid ${relayLimits.inviteTtlSeconds / 86400} days; at most ${relayLimits.openInvitesMax} open at once).`,
      auth: 'human',
      since: '0.9.3',
      response: inviteCreatedSchema,
      successStatus: 201,
      handle: async ({ caller }) => {
        const inviter = callerNode(caller);
        const { code, expiresMs } = await invites.create(inviter);
        return { code, inviter, state: 'open', expires_at: isoFromMs(expiresMs), accept: { method: 'POST', path: '/invites/accept', body: { code } } };
      },
    }),
    route({
      method: 'get',
      path: '/invites',
      summary: 'Your invites and their states (open, accepted, expired).',
      auth: 'human',
      since: '0.9.3',
      response: invitesSchema,
      handle: async ({ caller }) => {
        const rows = await reads.invitesOf(callerNode(caller));
        return {
          invites: rows.map((r) => ({
            code: r.code,
            state: r.state,
            created_at: isoFromMs(r.created_ms),
            expires_at: isoFromMs(r.expires_ms),
            accepted_by: r.accepted_by,
            accepted_at: r.accepted_ms === null ? null : isoFromMs(r.accepted_ms),
          })),
        };
      },
    }),
    route({
      method: 'post',
      path: '/invites/accept',
      summary: 'Accept an invite: records who invited you (once per node). Unknown, used and expired codes get the same 404.',
      auth: 'human',
      since: '0.9.3',
      response: inviteAcceptedSchema,
      body: inviteAcceptBody,
      handle: async ({ caller, body }) => {
        const nodeId = callerNode(caller);
        const { invitedBy, acceptedMs } = await invites.accept(nodeId, body.code.trim().toUpperCase());
        return { node_id: nodeId, invited_by: invitedBy, accepted_at: isoFromMs(acceptedMs) };
      },
    }),
    route({
      method: 'post',
      path: '/pair/start',
      summary: `Start pairing: a single-use token (valid ${relayLimits.pairTokenTtlSeconds} s; at most ${relayLimits.pendingPairingsMax} pending at once) to show as a QR image; another node confirms it to pair with you.`,
      auth: 'human',
      since: '0.9.3',
      response: pairStartedSchema,
      successStatus: 201,
      handle: async ({ caller }) => {
        const nodeId = callerNode(caller);
        const { token, expiresMs } = await pairing.start(nodeId);
        return { token, node_id: nodeId, state: 'pending', expires_at: isoFromMs(expiresMs), url: pairUrl(token), qr: `${pairUrl(token)}/qr` };
      },
    }),
    route({
      method: 'get',
      path: '/pair/{token}',
      summary: 'State of a pairing token: pending, paired or expired, and who started it.',
      auth: 'none',
      since: '0.9.3',
      response: pairStateSchema,
      handle: async ({ params }) => {
        const { row, state, starterName } = await reads.pairing(params.token!);
        return {
          state,
          node_id: row.node_id,
          name: starterName,
          expires_at: isoFromMs(row.expires_ms),
          paired_with: row.confirmed_by,
          confirm: { method: 'POST', path: '/pair/confirm', body: { token: params.token } },
        };
      },
    }),
    route({
      method: 'get',
      path: '/pair/{token}/qr',
      summary: 'The pairing URL as a QR code (PNG). 410 once the token was used or expired.',
      auth: 'none',
      since: '0.9.19',
      produces: 'image/png',
      handle: async ({ params, res }) => {
        await reads.pendingPairing(params.token!);
        const png = await pairingQrPng(pairUrl(params.token!));
        res.status(200).set({ 'content-type': 'image/png', 'cache-control': 'no-store' }).send(png);
        return alreadySent;
      },
    }),
    route({
      method: 'post',
      path: '/pair/confirm',
      summary: 'Confirm a pairing token shown by another node: the two nodes are paired (listed on both /nodes/{id}). Single use.',
      auth: 'human',
      since: '0.9.3',
      response: pairedSchema,
      body: pairConfirmBody,
      handle: async ({ caller, body }) => ({ state: 'paired', nodes: (await pairing.confirm(callerNode(caller), body.token)).nodes }),
    }),
  ];
}
