import { type BenchApiError, benchApiError, BenchTimeoutError } from './bench-errors.js';
import type { Transport } from './bench-transport.js';
import { fieldOf } from '../http-answer.js';

/**
 * One HTTP exchange with a bench service, as every `BenchClient` call makes it: a bearer token, a
 * timeout and the caller's abort signal on every call, and bounded retries of 409 and 503 that
 * wait as long as `Retry-After` says (never longer than `maxRetryDelayMs`).
 */

export interface CallOptions {
  /** Gives up after this many ms (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** Aborts the call; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface RetryPolicy {
  /** Further tries after a 409 or 503 (default 0: none). */
  attempts: number;
  /** The longest wait between tries, whatever `Retry-After` says (default 30 000). */
  maxRetryDelayMs?: number;
}

export interface HttpSettings {
  baseUrl: string;
  token: string | undefined;
  timeoutMs: number;
  retry: RetryPolicy;
  /** The JSON calls (`exchange`): undici's keep-alive agent, or the caller's own `fetch`. */
  transport: Transport;
  /** The streams (UART events, example firmware) and `request`. */
  fetch: typeof fetch;
  /** Waits between retries; rejects when `signal` aborts (injected by tests). */
  sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

export interface Answer {
  status: number;
  /** The value of header `name` (lower case), or null. */
  header: (name: string) => string | null;
  json: unknown;
}

/** A request body already encoded, with the content type that says how. */
export interface EncodedBody {
  body: string | Uint8Array;
  contentType: string;
}

/** Text fields as `application/x-www-form-urlencoded`, the body the service's forms take. */
export function formBody(fields: Readonly<Record<string, string>>): EncodedBody {
  return { body: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded;charset=UTF-8' };
}

/** A JSON body. */
export function jsonBody(value: unknown): EncodedBody {
  return { body: JSON.stringify(value), contentType: 'application/json' };
}

/** Sleeps `ms` in real time, or until `signal` aborts (then rejects with its reason). */
export function realSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After` in seconds (delta form), or undefined. */
export function retryAfterSeconds(header: (name: string) => string | null): number | undefined {
  const value = header('retry-after');
  const seconds = value === null ? NaN : Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/**
 * A signal that aborts with the caller's signal, or with a `BenchTimeoutError` after `timeoutMs`;
 * `release()` drops the timer once the call is over (a long wait of many calls keeps none behind).
 */
export function deadlineSignal(what: string, timeoutMs: number, signal: AbortSignal | undefined): { signal: AbortSignal; release: () => void } {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new BenchTimeoutError(what, timeoutMs)), timeoutMs);
  timer.unref?.();
  return { signal: signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal, release: () => clearTimeout(timer) };
}

/**
 * Sends one request and answers the parsed JSON of a 2xx answer; anything else throws the
 * `BenchApiError` subclass of its status, after the retries the policy allows.
 */
export async function exchange(settings: HttpSettings, method: string, path: string, init: { body?: EncodedBody } & CallOptions = {}): Promise<Answer> {
  const what = `${method} ${path}`;
  const timeoutMs = init.timeoutMs ?? settings.timeoutMs;
  const { signal, release } = deadlineSignal(what, timeoutMs, init.signal);
  try {
    return await exchangeUntil(settings, method, path, init, signal);
  } finally {
    release();
  }
}

async function exchangeUntil(settings: HttpSettings, method: string, path: string, init: { body?: EncodedBody }, signal: AbortSignal): Promise<Answer> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.body) headers['content-type'] = init.body.contentType;
  if (settings.token) headers.authorization = `Bearer ${settings.token}`;
  const url = settings.baseUrl + path;
  for (let attempt = 0; ; attempt++) {
    let answer: Awaited<ReturnType<Transport>>;
    try {
      // The body is read under the same deadline: a stalled answer is a timeout, not a hang.
      answer = await settings.transport({ method, url, headers, ...(init.body ? { body: init.body.body } : {}), signal });
    } catch (err) {
      throw signal.aborted ? (signal.reason as Error) : err;
    }
    const json = parsedJson(answer.text);
    if (answer.status >= 200 && answer.status < 300) return { status: answer.status, header: answer.header, json };
    const error: BenchApiError = benchApiError(method, path, answer.status, fieldOf(json, 'detail') ?? json, retryAfterSeconds(answer.header));
    const retriable = (answer.status === 409 || answer.status === 503) && attempt < settings.retry.attempts;
    if (!retriable) throw error;
    const waitMs = Math.min((error.retryAfterSeconds ?? 1) * 1000, settings.retry.maxRetryDelayMs ?? 30_000);
    await settings.sleep(waitMs, signal).catch(() => {
      throw signal.reason as Error;
    });
  }
}

function parsedJson(text: string): unknown {
  try {
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return text;
  }
}
