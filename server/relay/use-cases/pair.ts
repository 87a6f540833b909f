import { randomBytes } from 'node:crypto';
import type { RelayDeps } from '../relay-deps.js';
import { sha256Hex } from '../domain/credentials.js';
import { RelayRefusal, invalidInputAt } from '../domain/relay-errors.js';
import type { PairingRow } from '../../storage/relay/social-repository.js';
import type { Steps } from '../../storage/sql-steps.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

export type PairingState = 'paired' | 'expired' | 'pending';

/**
 * Pairing two nodes: one starts (a single-use token shown as a QR image), anyone may read the
 * token's state, and another node confirms it (POST /pair/start, GET /pair/{token}, GET
 * /pair/{token}/qr, POST /pair/confirm).
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

  /** The token's pairing and its state now. */
  async lookup(token: string): Promise<{ row: PairingRow; state: PairingState }> {
    const row = await this.deps.store.plain(this.pairingOf(token));
    return { row, state: this.stateOf(row) };
  }

  /** `lookup`, refused unless the token is still pending (its QR image is of no use after). */
  async pending(token: string): Promise<PairingRow> {
    const { row, state } = await this.lookup(token);
    if (state !== 'pending') throw notPending(state);
    return row;
  }

  /** `nodeId` confirms another node's pending token: the two are paired. */
  confirm(nodeId: string, token: string): Promise<{ nodes: [string, string] }> {
    const { social } = this.deps.store.data;
    const clock = this.deps.clock;
    const pairingOf = (t: string) => this.pairingOf(t);
    const stateOf = (row: PairingRow) => this.stateOf(row);
    return this.deps.store.tx(function* () {
      const row = yield* pairingOf(token);
      const state = stateOf(row);
      if (state !== 'pending') throw notPending(state);
      if (row.node_id === nodeId) throw new RelayRefusal('pairing_with_self', 'a node cannot pair with itself; confirm from the other node');
      yield* social.confirmPairing(row, nodeId, clock.nowMs());
      return { nodes: [row.node_id, nodeId] as [string, string] };
    });
  }

  private *pairingOf(token: string): Steps<PairingRow> {
    if (!/^[A-Za-z0-9_-]{16,128}$/.test(token)) throw invalidInputAt(['path', 'token'], [{ path: [], code: 'not_pairing_token', input: token }]);
    const row = yield* this.deps.store.data.social.pairing(sha256Hex(token));
    if (!row) throw new RelayRefusal('pairing_unknown', 'unknown pairing token');
    return row;
  }

  private stateOf(row: PairingRow): PairingState {
    return row.confirmed_by ? 'paired' : row.expires_ms <= this.deps.clock.nowMs() ? 'expired' : 'pending';
  }
}

function notPending(state: PairingState): RelayRefusal {
  return new RelayRefusal('pairing_not_pending', `pairing token is ${state}`);
}
