import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether `given` equals the configured secret `expected`, in constant time: both are hashed with
 * SHA-256 first, so neither the content nor the length of the secret leaks through timing.
 */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}

/** The token of an `authorization: Bearer <token>` header (the scheme in any case, RFC 7235 §2.1); undefined otherwise. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
}
