import { relayLimits } from '../../../wire/relay/relay-facts.js';

/**
 * The most bytes of a peer's event page this relay reads: every event as large as the largest
 * document a client may post (`jsonBodyMaxBytes`, which allows every character escaped) and its
 * envelope. An honest relay's page is far smaller; a peer that streams without end is cut here
 * instead of filling this relay's memory within the request timeout.
 */
export const PEER_PAGE_MAX_BYTES = relayLimits.eventsPageMax * (relayLimits.jsonBodyMaxBytes + 16 * 1024);

/** The most bytes of a peer's other JSON answers (`/health`). */
export const PEER_HEALTH_MAX_BYTES = 1024 * 1024;

/**
 * A peer's JSON answer of at most `maxBytes`: refused from its Content-Length before a byte is
 * read, else as soon as the bytes read pass the bound (the rest is cancelled, not read). The
 * cancel is not awaited: it settles when the peer's side lets go, which a hostile peer need not do.
 */
export async function readPeerJson(response: Response, url: string, maxBytes: number): Promise<unknown> {
  const tooLarge = () => new Error(`${url} answered more than ${maxBytes} bytes; not read further`);
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    void response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength;
      if (size > maxBytes) {
        void reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(read.value);
    }
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}
