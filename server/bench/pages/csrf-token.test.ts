import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CSRF_TOKEN_TTL_MS, issueCsrfToken, verifyCsrfToken } from './csrf-token.js';

const secret = new Uint8Array(32).map((_, i) => i + 1);
const t0 = Date.UTC(2026, 10, 20, 12, 0, 0);

describe('CSRF tokens', () => {
  it('verifies a token it issued, until exactly the end of its lifetime', () => {
    const token = issueCsrfToken(secret, t0);
    expect(token).toMatch(/^v1\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    expect(verifyCsrfToken(token, secret, t0)).toEqual({ ok: true, issuedAtMs: t0 });
    expect(verifyCsrfToken(token, secret, t0 + CSRF_TOKEN_TTL_MS)).toEqual({ ok: true, issuedAtMs: t0 });
    expect(verifyCsrfToken(token, secret, t0 + CSRF_TOKEN_TTL_MS + 1)).toEqual({ ok: false, reason: 'expired' });
    expect(verifyCsrfToken(token, secret, t0 + 10_000, 5_000)).toEqual({ ok: false, reason: 'expired' });
  });

  it('issues a different nonce each time', () => {
    expect(issueCsrfToken(secret, t0)).not.toBe(issueCsrfToken(secret, t0));
  });

  it('refuses a token from another secret, or re-dated, as forged', () => {
    const other = issueCsrfToken(new Uint8Array(32).fill(9), t0);
    expect(verifyCsrfToken(other, secret, t0)).toEqual({ ok: false, reason: 'forged' });
    const [v, , nonce, mac] = issueCsrfToken(secret, t0, 'n0nce').split('.');
    expect(verifyCsrfToken(`${v}.${t0 + CSRF_TOKEN_TTL_MS}.${nonce}.${mac}`, secret, t0 + CSRF_TOKEN_TTL_MS + 5)).toEqual({
      ok: false,
      reason: 'forged',
    });
  });

  it('refuses a token dated in the future beyond a minute of tolerance', () => {
    const token = issueCsrfToken(secret, t0 + 61_000);
    expect(verifyCsrfToken(token, secret, t0)).toEqual({ ok: false, reason: 'not-yet-valid' });
    expect(verifyCsrfToken(issueCsrfToken(secret, t0 + 59_000), secret, t0).ok).toBe(true);
  });

  it.each(['', 'v1', 'v2.1.abc.def', 'v1.x.abc.def', 'v1.1..def', 'v1.1.abc.', 'v1.1.abc.def.ghi', 'v1.1.a+c.def', `v1.1.abc.${'A'.repeat(42)}`])(
    'refuses %j without throwing',
    (token) => {
      const verdict = verifyCsrfToken(token, secret, t0);
      expect(verdict).toEqual({ ok: false, reason: token === '' ? 'missing' : 'malformed' });
    },
  );

  it('refuses every single-character change of a valid token (property)', () => {
    const token = issueCsrfToken(secret, t0);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...alphabet), (at, ch) => {
        fc.pre(token[at] !== ch);
        const changed = token.slice(0, at) + ch + token.slice(at + 1);
        expect(verifyCsrfToken(changed, secret, t0).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses to work with a secret shorter than 16 bytes', () => {
    expect(() => issueCsrfToken(new Uint8Array(15), t0)).toThrow(/at least 16 bytes/);
    expect(() => verifyCsrfToken('x', new Uint8Array(0), t0)).toThrow(/at least 16 bytes/);
  });
});
