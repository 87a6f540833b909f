import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Clock } from '../../../core/clock.js';
import type { FileStore } from './file-store.js';
import { readPeerJson } from './peer-answer.js';

export interface PeerExchangeOptions {
  clock: Clock;
  /** Outbound HTTP, injected so tests can intercept it (msw) and refuse stray requests. */
  fetch: typeof fetch;
  files: FileStore;
  /** Bound on one JSON exchange (health, one event page), ms. */
  requestTimeoutMs: number;
  /** Bound on downloading one file, ms. */
  fileTimeoutMs: number;
}

/**
 * Federation's outbound HTTP: every exchange with a peer (a JSON answer, a file's bytes) runs
 * under one deadline on the injected clock and never follows a redirect, so a peer that trickles
 * its answer or points elsewhere cannot hold or steer a probe.
 */
export class PeerExchange {
  constructor(private readonly o: PeerExchangeOptions) {}

  /** A peer's JSON answer of at most `maxBytes`; throws when it is not a 2xx or not read in time. */
  getJson(url: string, maxBytes: number): Promise<unknown> {
    return this.exchange(url, { headers: { accept: 'application/json' } }, this.o.requestTimeoutMs, async (response) => {
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return readPeerJson(response, url, maxBytes);
    });
  }

  /**
   * Fetches a file item's bytes into the file store. Returns null when stored, or why the peer's
   * answer is refused for good (wrong content, too large, a 4xx other than 408 and 429). Throws
   * when the download failed in a way that may pass: network error, timeout, 5xx, 408, 429.
   */
  fetchFile(peer: string, itemId: string): Promise<string | null> {
    const url = `${peer}/items/${itemId}`;
    return this.exchange(url, { headers: { accept: 'application/octet-stream' } }, this.o.fileTimeoutMs, async (response) => {
      const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
      if (retryable) throw new Error(`${url} answered ${response.status}`);
      if (!response.ok) return `${url} answered ${response.status}`;
      if (!response.body) return `${url} answered without a body`;
      const received = await this.o.files.receiveVerified(Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>), itemId);
      return received.ok ? null : received.reason;
    });
  }

  /**
   * Runs one outbound exchange (request and reading its whole body) under one deadline of
   * `timeoutMs` on the injected clock, so a peer that trickles its answer cannot hold a probe.
   */
  private async exchange<T>(url: string, init: RequestInit, timeoutMs: number, read: (response: Response) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    const timer = this.o.clock.setTimeout(() => abort.abort(new Error(`no complete answer from ${url} within ${timeoutMs} ms`)), timeoutMs);
    try {
      const response = await this.o.fetch(url, { ...init, signal: abort.signal, redirect: 'error' });
      return await read(response);
    } finally {
      this.o.clock.clearTimeout(timer);
    }
  }
}
