import { randomBytes } from 'node:crypto';
import type { RelayDeps } from '../relay-deps.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import { inviteState } from '../domain/social-states.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/** A random code that is easy to read aloud: Crockford base32 (256 is a multiple of 32, so no bias). */
export function readableCode(length = 12): string {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let out = '';
  for (const b of randomBytes(length)) out += alphabet[b % 32];
  return out;
}

/** POST /invites and POST /invites/accept: single-use codes that record who invited whom. */
export class Invite {
  constructor(private readonly deps: RelayDeps) {}

  /** A new open invite of `inviter`; refused past `openInvitesMax` open ones. */
  async create(inviter: string): Promise<{ code: string; expiresMs: number }> {
    const { social } = this.deps.store.data;
    const clock = this.deps.clock;
    const code = readableCode();
    const expiresMs = clock.nowMs() + relayLimits.inviteTtlSeconds * 1000;
    await this.deps.store.tx(function* () {
      // Invites expired or accepted an invite's lifetime ago leave GET /invites and /me/export from now on.
      yield* social.pruneDoneInvites(inviter, clock.nowMs(), relayLimits.inviteTtlSeconds * 1000);
      if ((yield* social.countOpenInvites(inviter, clock.nowMs())) >= relayLimits.openInvitesMax) {
        throw new RelayRefusal('invites_limit_reached', `at most ${relayLimits.openInvitesMax} open invites; wait for some to be accepted or expire`);
      }
      yield* social.insertInvite({ code, inviter, nowMs: clock.nowMs(), expiresMs });
    });
    return { code, expiresMs };
  }

  /** `nodeId` accepts the invite `code` (once per node, never its own); answers who invited it. */
  accept(nodeId: string, code: string): Promise<{ invitedBy: string; acceptedMs: number }> {
    const { social, nodes } = this.deps.store.data;
    const clock = this.deps.clock;
    return this.deps.store.tx(function* () {
      const row = yield* social.invite(code);
      if (!row || inviteState(row, clock.nowMs()) !== 'open') throw new RelayRefusal('invite_unusable', 'unknown, used or expired invite code');
      if (row.inviter === nodeId) throw new RelayRefusal('invite_refused', 'you cannot accept your own invite');
      if ((yield* nodes.get(nodeId))?.invited_by) throw new RelayRefusal('invite_refused', 'you already accepted an invite');
      yield* social.acceptInvite(code, nodeId, clock.nowMs());
      yield* nodes.setInvitedBy(nodeId, row.inviter, clock.nowMs());
      return { invitedBy: row.inviter, acceptedMs: clock.nowMs() };
    });
  }
}
