import { randomBytes } from 'node:crypto';
import QRCode from 'qrcode';
import { isoFromMs } from '../../../core/clock.js';
import { sha256Hex } from '../domain/credentials.js';
import type { Steps } from '../../storage/sql-steps.js';
import type { RelayDeps } from '../relay-deps.js';
import { HttpError } from '../../http/http-error.js';
import { invalidInput } from './relay-error.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { inviteAcceptedSchema, inviteCreatedSchema, invitesSchema, pairStartedSchema, pairStateSchema, pairedSchema } from '../../../wire/relay/social-responses.js';
import { type RelayRoute, alreadySent, callerNode, route } from './relay-route.js';
import { inviteAcceptBody, pairConfirmBody } from '../../../wire/relay/relay-schemas.js';
import type { PairingRow } from '../../storage/relay/social-repository.js';

/** A random code that is easy to read aloud: Crockford base32 (256 is a multiple of 32, so no bias). */
export function readableCode(length = 12): string {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let out = '';
  for (const b of randomBytes(length)) out += alphabet[b % 32];
  return out;
}

/** The PNG QR code of a pairing URL (error correction M: survives a phone camera at an angle). */
export function pairingQrPng(url: string): Promise<Buffer> {
  return QRCode.toBuffer(url, { type: 'png', errorCorrectionLevel: 'M', margin: 2, scale: 6 });
}


/** Invites and pairing. */
export function socialRoutes(deps: RelayDeps): RelayRoute[] {
  const { social, nodes } = deps.store.data;
  const plain = deps.store.plainData;
  const now = () => deps.clock.nowMs();

  const pairingOf = function* (token: string): Steps<PairingRow> {
    if (!/^[A-Za-z0-9_-]{16,128}$/.test(token)) throw invalidInput(['path', 'token'], 'Value error, not a pairing token', token);
    const row = yield* social.pairing(sha256Hex(token));
    if (!row) throw new HttpError(404, 'unknown pairing token');
    return row;
  };
  const pairingState = (row: PairingRow) => (row.confirmed_by ? 'paired' : row.expires_ms <= now() ? 'expired' : 'pending');
  const pairUrl = (token: string) => `${deps.baseUrl}/pair/${token}`;

  const inviteState = (r: { accepted_by: string | null; expires_ms: number }) => (r.accepted_by ? 'accepted' : r.expires_ms <= now() ? 'expired' : 'open');

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
        const code = readableCode();
        const expiresMs = now() + relayLimits.inviteTtlSeconds * 1000;
        await deps.store.tx(function* () {
          // Invites expired or accepted an invite's lifetime ago leave GET /invites and /me/export from now on.
          yield* social.pruneDoneInvites(inviter, now(), relayLimits.inviteTtlSeconds * 1000);
          if ((yield* social.countOpenInvites(inviter, now())) >= relayLimits.openInvitesMax) {
            throw new HttpError(409, `at most ${relayLimits.openInvitesMax} open invites; wait for some to be accepted or expire`);
          }
          yield* social.insertInvite({ code, inviter, nowMs: now(), expiresMs });
        });
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
        const rows = await plain.social.invitesOf(callerNode(caller));
        return {
          invites: rows.map((r) => ({
            code: r.code,
            state: inviteState(r),
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
      handle: ({ caller, body }) => {
        const nodeId = callerNode(caller);
        const code = body.code.trim().toUpperCase();
        return deps.store.tx(function* () {
          const row = yield* social.invite(code);
          if (!row || inviteState(row) !== 'open') throw new HttpError(404, 'unknown, used or expired invite code');
          if (row.inviter === nodeId) throw new HttpError(409, 'you cannot accept your own invite');
          if ((yield* nodes.get(nodeId))?.invited_by) throw new HttpError(409, 'you already accepted an invite');
          yield* social.acceptInvite(code, nodeId, now());
          yield* nodes.setInvitedBy(nodeId, row.inviter, now());
          return { node_id: nodeId, invited_by: row.inviter, accepted_at: isoFromMs(now()) };
        });
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
        const token = randomBytes(24).toString('base64url');
        const expiresMs = now() + relayLimits.pairTokenTtlSeconds * 1000;
        await deps.store.tx(function* () {
          // Its expired tokens, and tokens confirmed a token's lifetime ago, answer 404 from now on.
          yield* social.pruneDonePairings(nodeId, now(), relayLimits.pairTokenTtlSeconds * 1000);
          if ((yield* social.countPendingPairings(nodeId, now())) >= relayLimits.pendingPairingsMax) {
            throw new HttpError(409, `at most ${relayLimits.pendingPairingsMax} pending pairing tokens; wait for some to be confirmed or expire`);
          }
          yield* social.insertPairing({ tokenHash: sha256Hex(token), nodeId, nowMs: now(), expiresMs });
        });
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
        const row = await deps.store.plain(pairingOf(params.token!));
        const starter = await plain.nodes.get(row.node_id);
        return {
          state: pairingState(row),
          node_id: row.node_id,
          name: starter?.name ?? '',
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
        const row = await deps.store.plain(pairingOf(params.token!));
        if (pairingState(row) !== 'pending') throw new HttpError(410, `pairing token is ${pairingState(row)}`);
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
      handle: ({ caller, body }) => {
        const nodeId = callerNode(caller);
        return deps.store.tx(function* () {
          const row = yield* pairingOf(body.token);
          if (pairingState(row) !== 'pending') throw new HttpError(410, `pairing token is ${pairingState(row)}`);
          if (row.node_id === nodeId) throw new HttpError(409, 'a node cannot pair with itself; confirm from the other node');
          yield* social.confirmPairing(row, nodeId, now());
          return { state: 'paired', nodes: [row.node_id, nodeId] };
        });
      },
    }),
  ];
}
