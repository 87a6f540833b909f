import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import ipaddr from 'ipaddr.js';
import type { Clock } from '../../core/clock.js';
import { HttpError } from './http-error.js';

/** Clients a limiter remembers at most; the least recently seen is forgotten first (about 100 bytes each). */
export const DEFAULT_MAX_CLIENTS = 10_000;

/**
 * Per-client token buckets on the injected clock (decision 0232): a client may make `requests` at
 * once, and one more every `perMs / requests` ms after that, so "10 per minute" allows a burst of
 * 10 and then one every 6 s. Memory is bounded: at most `maxClients` buckets, the least recently
 * used dropped first (a dropped client starts again with a full bucket).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();
  private readonly tokensPerMs: number;
  private readonly maxClients: number;

  constructor(private readonly o: { clock: Clock; requests: number; perMs: number; maxClients?: number }) {
    if (!(o.requests >= 1) || !(o.perMs > 0)) throw new RangeError(`a rate limit needs at least 1 request per a positive period; got ${o.requests} per ${o.perMs} ms`);
    this.tokensPerMs = o.requests / o.perMs;
    this.maxClients = o.maxClients ?? DEFAULT_MAX_CLIENTS;
  }

  get requests(): number {
    return this.o.requests;
  }

  get perMs(): number {
    return this.o.perMs;
  }

  /** Clients currently remembered (for tests of the bound). */
  get clients(): number {
    return this.buckets.size;
  }

  /** Spends one request of `client`: 0 when allowed, otherwise the ms until it would be (nothing spent). */
  take(client: string): number {
    const nowMs = this.o.clock.nowMs();
    const bucket = this.buckets.get(client);
    // A clock that went back (fake clocks in tests, a host clock step) refills nothing rather than taking.
    const tokens = bucket === undefined ? this.o.requests : Math.min(this.o.requests, bucket.tokens + Math.max(0, nowMs - bucket.atMs) * this.tokensPerMs);
    // Re-inserted at every use, so the Map's first key is the least recently seen client.
    this.buckets.delete(client);
    if (tokens >= 1) {
      this.buckets.set(client, { tokens: tokens - 1, atMs: nowMs });
      while (this.buckets.size > this.maxClients) this.buckets.delete(this.buckets.keys().next().value as string);
      return 0;
    }
    this.buckets.set(client, { tokens, atMs: nowMs });
    return Math.ceil((1 - tokens) / this.tokensPerMs);
  }
}

/**
 * The address a request came from: the connected peer, or with `trustProxyHops` n > 0 (that many
 * reverse proxies in front, each appending to X-Forwarded-For) the address the outermost of them
 * saw, the n-th from the right of X-Forwarded-For plus the peer. Entries further left are whatever
 * the client wrote and are never used. Without proxies configured the header is ignored: anyone
 * could send it.
 */
export function clientAddress(req: IncomingMessage, trustProxyHops: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (!(trustProxyHops >= 1)) return peer;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const chain = [...forwarded, peer];
  return chain[Math.max(0, chain.length - 1 - Math.floor(trustProxyHops))]!;
}

/**
 * The bucket key of an address: IPv4 as it is (also when written IPv4-mapped), IPv6 by its /56,
 * the block one subscriber usually holds (a host picks any address in its /64 at will; /56 as
 * express-rate-limit does). Anything else (a unix socket) is its own key, cut to 100 characters.
 */
export function clientKey(address: string): string {
  if (isIP(address) === 0) return address.slice(0, 100);
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.map((part, i) => (i < 3 ? part : i === 3 ? part & 0xff00 : 0));
  return `${new ipaddr.IPv6(parts).toString()}/56`;
}

export interface RateLimitOptions {
  limiter: RateLimiter;
  /** The client address of a request (see `clientAddress`). */
  clientOf: (req: Request) => string;
  /** What is limited, plural, for the answer: "agent registrations". */
  what: string;
  /** Answer browsers that prefer HTML (a human form) with a short page instead of JSON. */
  htmlForBrowsers?: boolean;
}

/**
 * Middleware answering 429 with `Retry-After` (whole seconds) once a client is over its limit:
 * `{"detail": ...}` through the service's error handler, or a readable page for a browser form.
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const { limiter, what } = options;
  const perSeconds = limiter.perMs / 1000;
  return (req: Request, res: Response, next: NextFunction) => {
    const waitMs = limiter.take(clientKey(options.clientOf(req)));
    if (waitMs === 0) {
      next();
      return;
    }
    const retryAfterSeconds = String(Math.max(1, Math.ceil(waitMs / 1000)));
    const detail = `too many ${what} from your address: at most ${limiter.requests} per ${perSeconds} s; retry after ${retryAfterSeconds} s`;
    if (options.htmlForBrowsers === true && req.get('accept') !== undefined && req.accepts(['application/json', 'text/html']) === 'text/html') {
      res.status(429).set({ 'Retry-After': retryAfterSeconds, 'Cache-Control': 'no-store', 'Content-Security-Policy': "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'" });
      res.type('html').send(
        `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Too many requests</title></head><body><h1>Too many requests</h1><p>${escapeHtml(detail)}.</p><p><a href="/">Back</a></p></body></html>`,
      );
      return;
    }
    next(new HttpError(429, detail, { 'Retry-After': retryAfterSeconds }));
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
