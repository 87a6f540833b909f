import type express from 'express';

/**
 * Content-Security-Policy of the HTML pages: nothing but our own nonce'd style sheet and script,
 * our own images, and requests back to this origin (the live updates).
 */
function contentSecurityPolicy(styleNonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${styleNonce}'`,
    `script-src 'nonce-${styleNonce}'`,
    "connect-src 'self'",
    "img-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function setCommonHeaders(res: express.Response): void {
  res.set('X-Content-Type-Options', 'nosniff');
  res.set('Referrer-Policy', 'no-referrer');
}

export function sendHtmlPage(res: express.Response, styleNonce: string, page: string): void {
  setCommonHeaders(res);
  res.set('Content-Security-Policy', contentSecurityPolicy(styleNonce));
  // Live status and a fresh CSRF token: a cached copy would be stale on both counts.
  res.set('Cache-Control', 'no-store');
  res.type('text/html; charset=utf-8').send(page);
}

