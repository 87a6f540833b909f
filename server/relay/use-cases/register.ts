import type { z } from 'zod';
import { nodeIdProblem } from '../../../core/relay/node-id.js';
import type { RelayDeps } from '../relay-deps.js';
import { RelayRefusal, invalidInputAt } from '../domain/relay-errors.js';
import { verifySignedDocument } from '../domain/signed-document.js';
import { unixSeconds } from '../domain/statement-time.js';
import type { Steps } from '../../storage/sql-steps.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import type { registerBody, sessionBody } from '../../../wire/relay/relay-schemas.js';

/** A node's credential, as registration and sign-in answer it. */
export interface NodeCredential {
  nodeId: string;
  credential: string;
}

/**
 * POST /register and POST /session: a node proves its key with a signed document for this relay,
 * fresh and never used before, and gets its current human credential; POST /login/verify gets it
 * with a code sent to the node's verified number instead.
 */
export class Register {
  constructor(private readonly deps: RelayDeps) {}

  /** Registers the node (or proves its key again: it becomes local and keeps its credential). */
  async register(doc: z.infer<typeof registerBody>): Promise<NodeCredential & { created: boolean }> {
    const { store } = this.deps;
    const { nodes } = store.data;
    const checkProof = this.checkProof(doc);
    const clock = this.deps.clock;
    const created = await store.tx(function* () {
      yield* checkProof();
      const nowMs = clock.nowMs();
      const existing = yield* nodes.get(doc.node_id);
      const registration = JSON.stringify(doc);
      if (existing) {
        // Registering again proves the key again: the node becomes local (if it was only known
        // from a peer) and gets its current credential; nothing is revoked.
        yield* nodes.markLocal(doc.node_id, doc.name ?? null, nowMs);
        return false;
      }
      yield* nodes.insert({ nodeId: doc.node_id, local: true, name: doc.name ?? '', registration, nowMs });
      yield* store.appendEvent('node', doc.node_id, doc.node_id, { registration: doc }, nowMs);
      return true;
    });
    return { ...(await this.credentialOf(doc.node_id)), created };
  }

  /** Signs a node registered here in again. */
  async session(doc: z.infer<typeof sessionBody>): Promise<NodeCredential> {
    const { nodes } = this.deps.store.data;
    const checkProof = this.checkProof(doc);
    await this.deps.store.tx(function* () {
      yield* checkProof();
      if ((yield* nodes.get(doc.node_id))?.local !== 1) throw new RelayRefusal('node_not_registered', 'node not registered on this relay; POST /register first');
    });
    return this.credentialOf(doc.node_id);
  }

  /** Redeems a login code sent to `phone` (normalized): the current credential of the node that verified it. */
  async login(phone: string, code: string): Promise<NodeCredential> {
    return this.credentialOf(await this.deps.codes.redeem(phone, 'login', code));
  }

  /** A node's current human credential (after recovery, the new one). */
  async credentialOf(nodeId: string): Promise<NodeCredential> {
    return { nodeId, credential: await this.deps.credentials.currentCredential(nodeId) };
  }

  /**
   * Checks a signed registration or session document: right relay, fresh, signed by the node it
   * names, never seen before. Burns the signature so a captured document cannot be replayed.
   */
  private checkProof(doc: z.infer<typeof sessionBody> | z.infer<typeof registerBody>): () => Steps<void> {
    const { baseUrl, clock, store } = this.deps;
    const { nodes } = store.data;
    return function* () {
      const problem = nodeIdProblem(doc.node_id);
      if (problem) throw invalidInputAt(['body'], [{ path: ['node_id'], code: 'unacceptable_node_id', note: problem, input: doc.node_id }]);
      if (doc.relay !== baseUrl) throw invalidInputAt(['body'], [{ path: ['relay'], code: 'not_this_relay', expected: baseUrl, input: doc.relay }]);
      const nowSeconds = unixSeconds(clock.nowMs());
      const skew = Math.abs(nowSeconds - doc.created_at);
      if (skew > relayLimits.proofMaxSkewSeconds) {
        throw invalidInputAt(['body'], [{ path: ['created_at'], code: 'created_at_skew', count: skew, limit: relayLimits.proofMaxSkewSeconds, nowSeconds, input: doc.created_at }]);
      }
      if (!verifySignedDocument(doc, doc.node_id)) throw invalidInputAt(['body'], [{ path: ['sig'], code: 'not_node_signature', input: doc.sig }]);
      if (!(yield* nodes.burnProof(doc.sig, clock.nowMs()))) throw new RelayRefusal('proof_reused', 'this signed document was already used; sign a new one with a fresh created_at');
    };
  }
}
