/**
 * The one place the relay service imports the protocol core from (`core/relay`). Everything
 * protocol-shaped (canonical bytes, ids, claim rules, quorum sets, votes, signatures, the tally)
 * comes from there; the service never re-implements a verifier or a tally.
 */
export {
  canonicalJson,
  codePointLength,
  claimId,
  claimKinds,
  validateClaim,
  isItemId,
  verifyEd25519,
  signEd25519,
  isNodeId,
  nodeIdProblem,
  nodeIdToPublicKey,
  nodeKeyFromSecret,
  generateNodeKey,
  defaultThreshold,
  normalizeQuorumSet,
  quorumSetHash,
  quorumSetDepthIssue,
  validateQuorumSet,
  entryCount,
  parseVote,
  signVote,
  verifyVote,
  isSignatureText,
  tally,
  bulletinRank,
} from '../../core/relay/index.js';
export type {
  Claim,
  Issue as CoreIssue,
  NodeKey,
  QuorumSet,
  Vote,
  UnsignedVote,
  VoteValue,
  VotePhase,
  Bulletin,
  BulletinState,
  EmittedStatement,
} from '../../core/relay/index.js';
