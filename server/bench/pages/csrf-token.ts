import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Stateless CSRF tokens for the waitlist form (docs/pages.md, "CSRF").
 *
 * A token is `v1.<issuedAtMs>.<nonce>.<mac>` where `mac = HMAC-SHA256(secret, "hilbench-csrf/v1|" +
 * issuedAtMs + "|" + nonce)`, base64url. The server keeps no record of issued tokens: a token is
 * valid when its MAC verifies (compared in constant time) and its age, measured on the injected
 * clock, is within `ttlMs`. Tokens are not single-use; a replay within the lifetime can only
 * repeat an idempotent waitlist join.
 */

/** How long a rendered form stays submittable: long enough to read the page and type, short enough to bound reuse. */
export const CSRF_TOKEN_TTL_MS = 2 * 60 * 60 * 1000;

/** Clocks of one server do not drift, but a token "issued" well in the future was not issued by us. */
const FUTURE_TOLERANCE_MS = 60 * 1000;

const VERSION = 'v1';
const NONCE_BYTES = 16;
const MAC_BYTES = 32;
/** Domain separation: the same server secret may sign other things; their MACs must never verify here. */
const MAC_CONTEXT = 'hilbench-csrf/v1';

export type CsrfRejection = 'missing' | 'malformed' | 'forged' | 'expired' | 'not-yet-valid';

export type CsrfVerdict = { ok: true; issuedAtMs: number } | { ok: false; reason: CsrfRejection };

function mac(secret: Uint8Array, issuedAtMs: number, nonce: string): Buffer {
  return createHmac('sha256', secret).update(`${MAC_CONTEXT}|${issuedAtMs}|${nonce}`).digest();
}

function checkSecret(secret: Uint8Array): void {
  // A short secret makes every token guessable; refuse it loudly at the first use rather than sign with it.
  if (secret.byteLength < 16) {
    throw new RangeError(`csrfSecret must be at least 16 bytes (32 random bytes recommended), got ${secret.byteLength}`);
  }
}

/** Issues a token at `nowMs` (host milliseconds since the epoch). `nonce` is for tests only; by default 16 random bytes. */
export function issueCsrfToken(secret: Uint8Array, nowMs: number, nonce?: string): string {
  checkSecret(secret);
  const issuedAtMs = Math.floor(nowMs);
  const n = nonce ?? randomBytes(NONCE_BYTES).toString('base64url');
  return `${VERSION}.${issuedAtMs}.${n}.${mac(secret, issuedAtMs, n).toString('base64url')}`;
}

/** Checks `token` against `secret` at `nowMs`; valid for `ttlMs` after issue. Never throws for bad tokens. */
export function verifyCsrfToken(
  token: string,
  secret: Uint8Array,
  nowMs: number,
  ttlMs: number = CSRF_TOKEN_TTL_MS,
): CsrfVerdict {
  checkSecret(secret);
  if (token === '') return { ok: false, reason: 'missing' };
  const parts = token.split('.');
  if (parts.length !== 4) return { ok: false, reason: 'malformed' };
  const [version, issuedText, nonce, macText] = parts as [string, string, string, string];
  if (version !== VERSION || !/^\d{1,15}$/.test(issuedText) || !/^[A-Za-z0-9_-]{1,64}$/.test(nonce)) {
    return { ok: false, reason: 'malformed' };
  }
  if (!/^[A-Za-z0-9_-]+$/.test(macText)) return { ok: false, reason: 'malformed' };
  const given = Buffer.from(macText, 'base64url');
  // Only the canonical encoding: base64url has spare bits in its last character, and a token
  // should have exactly one spelling.
  if (given.length !== MAC_BYTES || given.toString('base64url') !== macText) return { ok: false, reason: 'malformed' };
  const issuedAtMs = Number(issuedText);
  // Check the MAC before the time: an attacker learns nothing about the clock from a forged token.
  if (!timingSafeEqual(given, mac(secret, issuedAtMs, nonce))) return { ok: false, reason: 'forged' };
  if (issuedAtMs > nowMs + FUTURE_TOLERANCE_MS) return { ok: false, reason: 'not-yet-valid' };
  if (nowMs - issuedAtMs > ttlMs) return { ok: false, reason: 'expired' };
  return { ok: true, issuedAtMs };
}
