import { randomBytes } from 'node:crypto';
import type { RelayDeps } from '../relay-deps.js';
import { sha256Hex } from '../domain/credentials.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import { pairingNotPending, pairingOf, pairingState } from '../domain/social-states.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/**
 * Pairing two nodes: one starts (a single-use token shown as a QR image) and another node confirms
 * it (POST /pair/start, POST /pair/confirm). Reading a token's state is a query
 * (queries/social-reads.ts).
 */
export class Pair {
  constructor(private readonly deps: RelayDeps) {}

  /** A new pending token of `nodeId`; refused past `pendingPairingsMax` pending ones. */
  async start(nodeId: string): Promise<{ token: string; expiresMs: number }> {
    const { social } = this.deps.store.data;
    const clock = this.deps.clock;
    const token = randomBytes(24).toString('base64url');
    const expiresMs = clock.nowMs() + relayLimits.pairTokenTtlSeconds * 1000;
    await this.deps.store.tx(function* () {
      // Its expired tokens, and tokens confirmed a token's lifetime ago, answer 404 from now on.
      yield* social.pruneDonePairings(nodeId, clock.nowMs(), relayLimits.pairTokenTtlSeconds * 1000);
      if ((yield* social.countPendingPairings(nodeId, clock.nowMs())) >= relayLimits.pendingPairingsMax) {
        throw new RelayRefusal('pairings_limit_reached', `at most ${relayLimits.pendingPairingsMax} pending pairing tokens; wait for some to be confirmed or expire`);
      }
      yield* social.insertPairing({ tokenHash: sha256Hex(token), nodeId, nowMs: clock.nowMs(), expiresMs });
    });
    return { token, expiresMs };
  }

  /** `nodeId` confirms another node's pending token: the two are paired. */
  confirm(nodeId: string, token: string): Promise<{ nodes: [string, string] }> {
    const { social } = this.deps.store.data;
    const clock = this.deps.clock;
    return this.deps.store.tx(function* () {
      const row = yield* pairingOf(social, token);
      const state = pairingState(row, clock.nowMs());
      if (state !== 'pending') throw pairingNotPending(state);
      if (row.node_id === nodeId) throw new RelayRefusal('pairing_with_self', 'a node cannot pair with itself; confirm from the other node');
      yield* social.confirmPairing(row, nodeId, clock.nowMs());
      return { nodes: [row.node_id, nodeId] as [string, string] };
    });
  }
}
