import { errors, request } from 'undici';

/**
 * How a `BenchClient` sends its JSON calls (decision 0800). By default undici's `request` on its
 * keep-alive agent (the global dispatcher, the one `fetch` uses too, so a proxy set there applies
 * to both): a call then costs a few objects and a string, where `fetch` built a `Request`, a
 * `Response`, `Headers` and a web stream for every answer, most of the client's CPU per job in the
 * replicas benchmark. A caller's own `fetch` (proxies, tests that count requests) is used as it is.
 */

/** One call as the client sends it: the body already encoded, its content type among `headers`. */
export interface TransportRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal: AbortSignal;
}

/** One answer, read whole. */
export interface TransportAnswer {
  status: number;
  /** The value of header `name` (lower case), or null. */
  header: (name: string) => string | null;
  text: string;
}

export type Transport = (call: TransportRequest) => Promise<TransportAnswer>;

/** Calls through a `fetch` (the caller's own: a proxy, a test that counts requests). */
export function fetchTransport(fetchFn: typeof fetch): Transport {
  return async (call) => {
    const response = await fetchFn(call.url, { method: call.method, headers: call.headers, ...(call.body !== undefined ? { body: call.body } : {}), signal: call.signal });
    // The body is read under the same signal: a stalled answer is a timeout, not a hang.
    const text = await response.text();
    return { status: response.status, header: (name) => response.headers.get(name), text };
  };
}

/**
 * Calls through undici's `request` on the global dispatcher (a keep-alive agent). A connection
 * that fails rejects as `fetch` does, with a `TypeError` whose cause is the socket's error, so
 * callers that tell "could not reach the bench" from an answer keep doing so.
 */
export const undiciTransport: Transport = async (call) => {
  try {
    const answer = await request(call.url, { method: call.method as 'GET', headers: call.headers, ...(call.body !== undefined ? { body: call.body } : {}), signal: call.signal });
    const text = await answer.body.text();
    // undici's `request` does not follow redirects; `fetch` did (a bench behind a proxy that sends
    // http to https). A redirect is rare and not on the hot path: `fetch` follows it with the
    // method and body rules of the Fetch standard.
    if (answer.statusCode >= 300 && answer.statusCode < 400 && answer.headers.location !== undefined) return fetchTransport(fetch)(call);
    return { status: answer.statusCode, header: (name) => headerValue(answer.headers[name]), text };
  } catch (err) {
    // A call the caller built wrong (a header value with a line break in it) is not "unreachable".
    if (call.signal.aborted || err instanceof errors.InvalidArgumentError) throw err;
    throw new TypeError('fetch failed', { cause: err });
  }
};

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
