import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The operator's console session: signing in with the admin token sets a cookie that names its
 * expiry and carries an HMAC of it under a secret kept in the store, so the token itself never
 * sits in a browser and every replica sharing the store accepts the cookie.
 */

export const CONSOLE_COOKIE = 'hb_console';
/** How long a console sign-in lasts, ms. */
export const CONSOLE_SESSION_MS = 12 * 60 * 60 * 1000;

const mac = (secret: Uint8Array, expiresMs: number) => createHmac('sha256', secret).update(`hilbench-console/v1|${expiresMs}`).digest('base64url');

/** The cookie value of a sign-in at `nowMs`. */
export function consoleCookieValue(secret: Uint8Array, nowMs: number): string {
  const expiresMs = Math.floor(nowMs + CONSOLE_SESSION_MS);
  return `${expiresMs}.${mac(secret, expiresMs)}`;
}

/** True when the request's cookies hold a console session valid at `nowMs`. */
export function hasConsoleSession(cookieHeader: string | undefined, secret: Uint8Array, nowMs: number): boolean {
  const value = cookieHeader
    ?.split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${CONSOLE_COOKIE}=`))
    ?.slice(CONSOLE_COOKIE.length + 1);
  const match = value ? /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(value) : null;
  if (!match) return false;
  const expiresMs = Number(match[1]);
  if (expiresMs <= nowMs) return false;
  return timingSafeEqual(Buffer.from(match[2]!), Buffer.from(mac(secret, expiresMs)));
}

/** Compares a typed admin token with the configured one in constant time (digests of both). */
export function isAdminToken(given: string, adminToken: string | undefined): boolean {
  if (!adminToken) return false;
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(adminToken).digest());
}

/** The Set-Cookie header value of a sign-in (or, with `maxAgeSeconds` 0, of a sign-out). */
export function consoleSetCookie(value: string, options: { secure: boolean; maxAgeSeconds: number }): string {
  return `${CONSOLE_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${options.maxAgeSeconds}${options.secure ? '; Secure' : ''}`;
}
