import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/**
 * `X-Content-Type-Options: nosniff` on every response of a service (decision 0233): a browser
 * must take a JSON answer, which may echo what a caller sent, as JSON and never sniff it into
 * HTML or script. Set first, so error answers carry it too.
 */
export function noSniff(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

/** A CSP source allowing exactly the inline style element whose text is `css` (CSP 3 hash source). */
export function styleHashSource(css: string): string {
  return `'sha256-${createHash('sha256').update(css, 'utf8').digest('base64')}'`;
}

/**
 * The headers of a human page without scripts, as the bench pages send them: a Content-Security-Policy
 * allowing only `styleSources` (a nonce or hash) and same-origin images, no forms, no framing (also
 * `X-Frame-Options` for browsers without `frame-ancestors`), no referrer, no sniffing.
 */
export function setPageSecurityHeaders(res: Response, options: { styleSources: readonly string[] }): void {
  res.set({
    'Content-Security-Policy': [
      "default-src 'none'",
      `style-src ${options.styleSources.join(' ')}`,
      "img-src 'self'",
      "form-action 'none'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
  });
}
