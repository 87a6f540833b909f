import type { FileStore } from './file-store.js';
import type { PeerExchange } from './peer-exchange.js';
import type { PeerIngest, WireEvent } from './peer-ingest.js';
import { isItemId } from '../../../core/relay/claim.js';
import type { RelayStore } from '../relay-store.js';

/** One page of a peer's feed, checked, with the files its items name already fetched. */
export interface PeerPage {
  /** The events to ingest, in order (cut before a file that could not be fetched now). */
  events: WireEvent[];
  /** Per file item id: null when its bytes are stored (or were already), else why they are refused. */
  files: Map<string, string | null>;
  /** The cursor once these events are ingested. */
  next: number;
  /** The peer has more after them. */
  hasMore: boolean;
  /** Why the page was cut short by a failure that may pass (the cursor stays before it), or null. */
  transient: string | null;
}

export interface PeerPageReaderOptions {
  store: RelayStore;
  files: FileStore;
  exchange: PeerExchange;
  ingest: PeerIngest;
  /** Bytes of one event page read before the page is refused. */
  pageMaxBytes: number;
  /** Events asked for in one page (`limit`), at most `eventsPageMax`. */
  pageEvents: number;
  log: (message: string, cause: unknown) => void;
  /** Counts one refused document (a replayed or reordered page) against the peer's standing. */
  offend: (url: string, reason: string) => void;
}

/**
 * Reads one page of a peer's `/events` feed for a probe (federation.ts): never trusts its shape
 * (at most one page's worth, seqs strictly increasing past the cursor) and fetches the bytes of the
 * file items it names before the transaction that ingests it, since a transaction never waits on
 * the network.
 */
export class PeerPageReader {
  constructor(private readonly o: PeerPageReaderOptions) {}

  /** The page after `cursor`; throws when the peer cannot be read or served something that is no page. */
  async read(url: string, cursor: number): Promise<PeerPage> {
    const answer = await this.o.exchange.getJson(`${url}/events?since=${cursor}&limit=${this.o.pageEvents}`, this.o.pageMaxBytes);
    // Any JSON may come back (null too): its shape is checked before a field is read, so GET /reach
    // shows the peer's fault in words, never a JavaScript error's text.
    const body = (typeof answer === 'object' && answer !== null ? answer : {}) as { events?: unknown; next?: unknown; has_more?: unknown };
    if (!Array.isArray(body.events) || typeof body.next !== 'number') throw new Error(`${url}/events answered something that is not an event page`);
    // Never trust a peer's page shape: at most one page's worth, seqs strictly increasing past the cursor.
    const events = (body.events as WireEvent[]).slice(0, this.o.pageEvents);
    let previous = cursor;
    for (const ev of events) {
      if (typeof ev?.seq !== 'number' || !Number.isSafeInteger(ev.seq) || ev.seq <= previous) {
        // A replayed or reordered page: no relay serves one from a feed whose seqs only grow.
        const reason = `${url}/events answered seq ${JSON.stringify(ev?.seq) ?? 'none'} after ${previous}; refusing the page`;
        this.o.offend(url, reason);
        throw new Error(reason);
      }
      previous = ev.seq;
    }
    const { files, transient } = await this.fetchFiles(url, events);
    const next = events.length > 0 ? (events.at(-1) as WireEvent).seq : cursor;
    const hasMore = transient === null && (body.has_more === true || (body.events as unknown[]).length > events.length);
    return { events, files, next, hasMore, transient };
  }

  /**
   * Files are fetched before the transaction. A file the peer serves with the wrong content is
   * refused with its event; one that could not be fetched now (network error, timeout, 5xx, 408,
   * 429) ends the page just before its event (`events` is cut there), so the cursor stays there and
   * the next probe tries again. Moving past it lost the item and every vote for it for good (audit
   * finding 2).
   */
  private async fetchFiles(url: string, events: WireEvent[]): Promise<{ files: Map<string, string | null>; transient: string | null }> {
    const files = new Map<string, string | null>();
    // Nodes this page registers, so a file by one of them is worth fetching before they are stored.
    const authorsInPage = new Set<string>();
    for (let k = 0; k < events.length; k++) {
      const ev = events[k] as WireEvent;
      if (ev.kind === 'node' && this.o.ingest.registrationProblem(ev) === null) authorsInPage.add((ev.data as { registration: { node_id: string } }).registration.node_id);
      const item = (ev.data as { item?: { type?: unknown; id?: unknown } } | null)?.item;
      if (ev.kind !== 'item' || item?.type !== 'file' || !isItemId(item.id) || files.has(item.id)) continue;
      // Unsigned, forged or orphan file items are decided without downloading a byte.
      if (!(await this.o.ingest.fileWorthFetching(ev, authorsInPage))) continue;
      const present = await this.o.files.has(item.id);
      if (present || (await this.o.store.plainData.items.exists(item.id))) {
        // Copied here before the transaction, whose steps cannot wait for another replica's copy (`localSizeOf`).
        if (present) await this.o.files.sizeOf(item.id);
        files.set(item.id, null);
        continue;
      }
      try {
        files.set(item.id, await this.o.exchange.fetchFile(url, item.id));
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : String(cause);
        this.o.log(`relay: file ${item.id} from ${url} not fetched now; will retry from event ${ev.seq}`, cause);
        events.splice(k);
        return { files, transient: `event ${ev.seq} (item): file ${item.id} not fetched (${reason}); the cursor stays before it and the next probe retries` };
      }
    }
    return { files, transient: null };
  }
}
