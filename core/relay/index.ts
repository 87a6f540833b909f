/**
 * The x-relay protocol core: identities, canonical JSON, claims, quorum sets, signed votes and the
 * scp-s5 tally. Pure and dependency-light (node:crypto, @noble/ed25519): the relay HTTP service and
 * harness scenario steps both build on it. Definition: docs/scp-s5.md.
 */
export * from './problem.js';
export * from './canonical-json.js';
export * from './ed25519.js';
export * from './node-id.js';
export * from './claim.js';
export * from './quorum-set.js';
export * from './growing-quorum.js';
export * from './growing-tally.js';
export * from './vote.js';
export * from './tally.js';
export * from './signed-statement.js';
export * from './item-authorship.js';
export * from './slice-declaration.js';
