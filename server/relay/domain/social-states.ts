import { sha256Hex } from './credentials.js';
import { RelayRefusal, invalidInputAt } from './relay-errors.js';
import type { InviteRow, PairingRow, SocialRepository } from '../../storage/relay/social-repository.js';
import type { Steps } from '../../storage/sql-steps.js';

/** An invite's state at `nowMs`. */
export function inviteState(invite: Pick<InviteRow, 'accepted_by' | 'expires_ms'>, nowMs: number): 'accepted' | 'expired' | 'open' {
  return invite.accepted_by ? 'accepted' : invite.expires_ms <= nowMs ? 'expired' : 'open';
}

export type PairingState = 'paired' | 'expired' | 'pending';

/** A pairing token's state at `nowMs`. */
export function pairingState(row: Pick<PairingRow, 'confirmed_by' | 'expires_ms'>, nowMs: number): PairingState {
  return row.confirmed_by ? 'paired' : row.expires_ms <= nowMs ? 'expired' : 'pending';
}

/** The pairing of `token` (stored by its sha256); refused when the token is malformed or unknown. */
export function* pairingOf(social: Pick<SocialRepository, 'pairing'>, token: string): Steps<PairingRow> {
  if (!/^[A-Za-z0-9_-]{16,128}$/.test(token)) throw invalidInputAt(['path', 'token'], [{ path: [], code: 'not_pairing_token', input: token }]);
  const row = yield* social.pairing(sha256Hex(token));
  if (!row) throw new RelayRefusal('pairing_unknown', 'unknown pairing token');
  return row;
}

/** The refusal of a token that is no longer pending. */
export function pairingNotPending(state: PairingState): RelayRefusal {
  return new RelayRefusal('pairing_not_pending', `pairing token is ${state}`);
}
