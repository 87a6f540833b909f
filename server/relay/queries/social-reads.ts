import type { RelayDeps } from '../relay-deps.js';
import { type PairingState, inviteState, pairingNotPending, pairingOf, pairingState } from '../domain/social-states.js';
import type { InviteRow, PairingRow } from '../../storage/relay/social-repository.js';

/**
 * What may be read of invites and pairings: a node's invites (GET /invites) and a pairing token's
 * state (GET /pair/{token}, /pair/{token}/qr). Each returns data; routes shape it.
 */
export class SocialReads {
  constructor(private readonly deps: RelayDeps) {}

  /** The invites `inviter` made, newest first, each with its state now. */
  async invitesOf(inviter: string): Promise<(InviteRow & { state: ReturnType<typeof inviteState> })[]> {
    const rows = await this.deps.store.plainData.social.invitesOf(inviter);
    return rows.map((r) => ({ ...r, state: inviteState(r, this.deps.clock.nowMs()) }));
  }

  /** The token's pairing, its state now and the name of the node that started it ('' when unknown). */
  async pairing(token: string): Promise<{ row: PairingRow; state: PairingState; starterName: string }> {
    const { store, clock } = this.deps;
    const row = await store.plain(pairingOf(store.data.social, token));
    const state = pairingState(row, clock.nowMs());
    const starter = await store.plainData.nodes.get(row.node_id);
    return { row, state, starterName: starter?.name ?? '' };
  }

  /** The token's pairing, refused unless it is still pending (its QR image is of no use after). */
  async pendingPairing(token: string): Promise<PairingRow> {
    const { store, clock } = this.deps;
    const row = await store.plain(pairingOf(store.data.social, token));
    const state = pairingState(row, clock.nowMs());
    if (state !== 'pending') throw pairingNotPending(state);
    return row;
  }
}
