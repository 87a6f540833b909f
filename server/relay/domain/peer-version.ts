import { unstorableText } from './storable-text.js';

/** Characters of a peer's reported `version` kept at most: its own is `0.9.19`; a version is a label, not a payload. */
export const PEER_VERSION_MAX_CHARS = 64;

/**
 * Why a peer's `/health` `version` is not kept (it is stored and shown on the public peer lists), or
 * null when it is fine or absent. Unbounded, a peer filled every reader's answer with a 1 MiB string;
 * holding U+0000 it failed every probe of that peer on PostgreSQL (decision 0490).
 */
export function peerVersionProblem(version: unknown): string | null {
  if (version === undefined || version === null) return null;
  if (typeof version !== 'string') return 'not a string';
  if (version.length > PEER_VERSION_MAX_CHARS) return `longer than ${PEER_VERSION_MAX_CHARS} characters`;
  if (unstorableText(version) !== null) return 'holds U+0000 or a lone UTF-16 surrogate';
  return null;
}
