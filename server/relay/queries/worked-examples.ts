import { claimId } from '../../../core/relay/claim.js';
import { signItemAuthorship } from '../../../core/relay/item-authorship.js';
import { generateNodeKey } from '../../../core/relay/node-id.js';
import { quorumSetHash } from '../../../core/relay/quorum-set.js';
import { signSliceDeclaration } from '../../../core/relay/slice-declaration.js';
import { signVote } from '../../../core/relay/vote.js';
import type { RelayDeps } from '../relay-deps.js';
import { signDocument } from '../domain/signed-document.js';
import { registerSchema, relayLimits } from '../../../wire/relay/relay-facts.js';

/**
 * GET /examples: a claim with its id and its author's x.item/1 statement, a registration, a vote
 * and an x.slice/1 declaration, each signed afresh with a throwaway key, so they verify against
 * this relay (its address, its node, its clock). Reads nothing stored.
 */
export function workedExamples(deps: Pick<RelayDeps, 'selfKey' | 'clock' | 'baseUrl'>): Record<string, unknown> {
  const key = generateNodeKey();
  const claim = { kind: 'measurement', title: 'UART0 prints at 115200 baud on the pico bench', body: 'Measured with a logic analyser, 3 runs.' };
  const id = claimId(claim);
  const slice = { t: 1, v: [deps.selfKey.nodeId], i: [] };
  const createdAt = Math.floor(deps.clock.nowMs() / 1000);
  const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: id, voter: key.nodeId, value: 'yes', phase: 'vote', slice, created_at: createdAt }, key.secretKey);
  return {
    claim: {
      request: { method: 'POST', path: '/items', body: { ...claim, authorship: signItemAuthorship({ schema: 'x.item/1', item: id, type: 'claim', author: key.nodeId }, key.secretKey) } },
      id,
      id_rule: 'sha256("x.claim/1\\n" + kind + "\\n" + title + "\\n" + body), hex',
      authorship_rule: "optional x.item/1 statement: Ed25519 by the author's node key over RFC 8785 canonical JSON without sig; without it the item stays on this relay",
    },
    registration: {
      request: { method: 'POST', path: '/register', body: signDocument({ schema: registerSchema, node_id: key.nodeId, relay: deps.baseUrl, created_at: createdAt, name: 'example' }, key.secretKey) },
      rule: 'Ed25519 by the node key over RFC 8785 canonical JSON of the document without sig; sig is unpadded base64url; created_at within ' + relayLimits.proofMaxSkewSeconds + ' s; relay is this base URL; each document works once',
    },
    vote: { request: { method: 'POST', path: `/items/${id}/vote`, body: { ...vote, hint: 'hint is not signed: relays may change it' } }, slice_hash: quorumSetHash(slice) },
    slice: { request: { method: 'POST', path: '/slice', body: { v: [deps.selfKey.nodeId] } }, rule: 'omit t for the default threshold (67 %, rounded up)' },
    declaration: {
      request: { method: 'POST', path: '/slice/declare', body: signSliceDeclaration({ node_id: key.nodeId, slice, updated_ms: deps.clock.nowMs() }, key.secretKey) },
      rule: 'x.slice/1: Ed25519 by the node key over RFC 8785 canonical JSON without sig; slice_hash is quorumSetHash(slice); the newest updated_ms (Unix ms) wins; peers forward and verify it',
    },
  };
}
