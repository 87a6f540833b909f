import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { FileStore } from './file-store.js';
import { type HostResolver, peerTargetProblem, systemHostResolver } from './peer-target.js';
import { nodeIdProblem } from '../../../core/relay/node-id.js';
import { PEER_HEALTH_MAX_BYTES, PEER_PAGE_MAX_BYTES } from './peer-answer.js';
import { PeerExchange } from './peer-exchange.js';
import { PeerIngest, eventKindLabel } from './peer-ingest.js';
import { PeerPageReader } from './peer-page-reader.js';
import { peerVersionProblem } from './peer-version.js';
import { RelayRefusal, invalidInputAt } from './relay-errors.js';
import { relayLimits, relayProtocol } from '../../../wire/relay/relay-facts.js';
import type { RelayStore } from '../relay-store.js';
import type { Voting } from './voting.js';
import type { PeerRow } from '../../storage/relay/peer-repository.js';

export interface FederationOptions {
  store: RelayStore;
  clock: Clock;
  files: FileStore;
  voting: Voting;
  /** This relay's base URL (a peer with the same URL is refused). */
  baseUrl: string;
  selfNodeId: string;
  /** Outbound HTTP, injected so tests can intercept it (msw) and refuse stray requests. */
  fetch: typeof fetch;
  /** Bound on one outbound request (health, one event page); default 10000. */
  requestTimeoutMs?: number;
  /**
   * Bound on downloading one file (up to `fileMaxBytes`, 16 MiB), separate from `requestTimeoutMs`:
   * a page answers in milliseconds, a large file over a slow link takes far longer. Default 120000.
   */
  fileTimeoutMs?: number;
  /** Event pages pulled from one peer per probe (each at most `pageEvents` events). */
  maxPagesPerProbe?: number;
  /** Events asked for in one page (`limit`), 1 to `eventsPageMax` (500, the default): tests read a long feed in small pages. */
  pageEvents?: number;
  /**
   * Let peers added over HTTP point at loopback, link-local and private addresses (tests on
   * loopback, a relay on a private network). Default false: see `peerTargetProblem`.
   */
  allowPrivatePeers?: boolean;
  /** Resolves peer host names for that check; default the system resolver. */
  resolveHost?: HostResolver;
  /**
   * Refused documents (false signatures, mismatched ids or hashes, unknown authors) after which a
   * peer is suspended: no longer pulled from until an operator adds it again (POST /reach). Default 10.
   */
  offenceLimit?: number;
  /** Bytes of one event page read from a peer before the page is refused; default `PEER_PAGE_MAX_BYTES` (tests set less). */
  pageMaxBytes?: number;
  log: (message: string, cause: unknown) => void;
  /** Where refused documents, suspensions and reinstatements are reported; default `log`. */
  warn?: (message: string) => void;
}

export type { PeerRow };

/** Result of probing one peer. */
export interface ProbeResult {
  url: string;
  reachable: boolean;
  node_id: string | null;
  version: string | null;
  pulled: number;
  rejected: number;
  cursor: number;
  /** The probe read the peer's feed to its end (no page left, nothing held back by a failed file). */
  caught_up: boolean;
  error: string | null;
}

/** Result of pulling from one peer until caught up (POST /federation/pull). */
export interface PullResult extends ProbeResult {
  /** Probes it took (each reads up to `maxPagesPerProbe` pages). */
  probes: number;
}

/**
 * Federation: the relay knows its peers, probes their /health, and pulls their /events feed,
 * verifying everything before storing it (`PeerIngest`: registrations, the author's x.item/1
 * statement of each item, the node's x.slice/1 declaration of each slice, votes with the core's
 * `verifyVote`; claims by recomputing their id, files by hashing their bytes). A peer that serves
 * false documents loses standing and, past `offenceLimit`, is no longer pulled from (decision 0411).
 * What it stores it re-publishes in its own feed, so items travel across a chain of relays.
 * Nothing arrives unasked: a relay only pulls, never accepts pushes.
 *
 * This class keeps the peer list, runs the probes and keeps each peer's standing; the outbound
 * HTTP is `PeerExchange`, reading and checking one page of a feed `PeerPageReader`, and judging
 * and storing each event `PeerIngest`.
 */
export class Federation {
  private readonly maxPages: number;
  private readonly offenceLimit: number;
  private readonly ingest: PeerIngest;
  private readonly exchange: PeerExchange;
  private readonly pages: PeerPageReader;
  private probing = new Map<string, Promise<ProbeResult>>();
  /**
   * Every probe and sweep (`probeAll`, `pullNow`) under way, tracked from its first step: a sweep
   * still listing its peers has no probe running yet, and `close` must wait for it too.
   */
  private readonly running = new Set<Promise<unknown>>();
  /** Set by `close`: nothing new starts, and a sweep under way starts no further probe. */
  private closing = false;
  /** Peers from the relay's configuration: trusted as they are, whatever address they have. */
  private readonly configured = new Set<string>();

  constructor(private readonly o: FederationOptions) {
    this.maxPages = o.maxPagesPerProbe ?? 20;
    const pageEvents = o.pageEvents ?? relayLimits.eventsPageMax;
    if (!Number.isSafeInteger(pageEvents) || pageEvents < 1 || pageEvents > relayLimits.eventsPageMax) throw new RangeError(`pageEvents must be a whole number from 1 to ${relayLimits.eventsPageMax}; got ${pageEvents}`);
    this.offenceLimit = o.offenceLimit ?? 10;
    this.ingest = new PeerIngest(o);
    this.exchange = new PeerExchange({ clock: o.clock, fetch: o.fetch, files: o.files, requestTimeoutMs: o.requestTimeoutMs ?? 10_000, fileTimeoutMs: o.fileTimeoutMs ?? 120_000 });
    this.pages = new PeerPageReader({
      store: o.store,
      files: o.files,
      exchange: this.exchange,
      ingest: this.ingest,
      pageMaxBytes: o.pageMaxBytes ?? PEER_PAGE_MAX_BYTES,
      pageEvents,
      log: o.log,
      offend: (url, reason) => this.recordOffences(url, 1, reason),
    });
    this.warn = o.warn ?? ((message) => o.log(message, undefined));
  }

  private readonly warn: (message: string) => void;

  /** Normalises a peer URL (http or https, no trailing slash, no query) or refuses it as input at `loc`. */
  static normalizeUrl(input: string, loc: (string | number)[]): string {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw invalidInputAt(loc, [{ path: [], code: 'not_absolute_url', input }]);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidInputAt(loc, [{ path: [], code: 'not_http_url', input }]);
    if (url.search || url.hash || url.username || url.password) throw invalidInputAt(loc, [{ path: [], code: 'url_with_extras', input }]);
    return url.toString().replace(/\/+$/, '');
  }

  /** Adds a peer from the relay's configuration (the `peers` option): no address check, it is the operator's word. */
  addConfiguredPeer(input: string): Promise<{ peer: PeerRow; created: boolean }> {
    const url = Federation.normalizeUrl(input, ['peers']);
    this.configured.add(url);
    return this.insertPeer(url, input, null);
  }

  /**
   * Adds a peer someone asked for over HTTP (POST /reach; the caller checked they are an operator).
   * Unless `allowPrivatePeers`, a URL whose host is or resolves to a non-public address is refused
   * (`peer_not_public`; the check runs again before every probe, since a name may resolve elsewhere later).
   */
  async addRequestedPeer(input: string, addedBy: string): Promise<{ peer: PeerRow; created: boolean }> {
    const url = Federation.normalizeUrl(input, ['body', 'url']);
    const problem = await this.targetProblem(url);
    if (problem !== null) {
      throw new RelayRefusal('peer_not_public', `refused peer ${url}: ${problem}. Peers added over HTTP must be public addresses; configure private ones with the peers option, or start the relay with allowPrivatePeers`);
    }
    const added = await this.insertPeer(url, input, addedBy);
    // Adding a known peer again is how an operator restores its standing (see "Standing" in docs/relay-api.md).
    if (!added.created && (await this.o.store.plainData.peers.reinstate(url))) {
      this.warn(`relay: peer ${url} reinstated by ${addedBy}; its offence count starts again from 0`);
      return { peer: (await this.peer(url))!, created: false };
    }
    return added;
  }

  private async insertPeer(url: string, input: string, addedBy: string | null): Promise<{ peer: PeerRow; created: boolean }> {
    if (url === this.o.baseUrl) throw invalidInputAt(['body', 'url'], [{ path: [], code: 'own_url', input }]);
    const created = await this.o.store.plainData.peers.insertIfNew(url, addedBy, this.o.clock.nowMs());
    return { peer: (await this.peer(url))!, created };
  }

  /** Why the relay must not fetch from `url` now, or null (configured peers and `allowPrivatePeers` always pass). */
  private targetProblem(url: string): Promise<string | null> {
    if (this.o.allowPrivatePeers === true || this.configured.has(url)) return Promise.resolve(null);
    return peerTargetProblem(url, this.o.resolveHost ?? systemHostResolver);
  }

  peer(url: string): Promise<PeerRow | undefined> {
    return this.o.store.plainData.peers.get(url);
  }

  peers(): Promise<PeerRow[]> {
    return this.o.store.plainData.peers.all();
  }

  /** Probes every peer (or one), pulling new events; concurrent probes of one peer share one run. */
  probeAll(only?: string): Promise<ProbeResult[]> {
    return this.track(async () => {
      const targets = only === undefined ? (await this.peers()).map((p) => p.url) : [only];
      this.refuseIfClosing();
      return Promise.all(targets.map((url) => this.probe(url)));
    });
  }

  /**
   * Pulls from every peer (or one) now until each is caught up, fails, or `maxProbes` probes ran:
   * one probe reads at most `maxPagesPerProbe` pages, so a peer with a long feed needs several.
   * Peers are pulled one after another, so what one peer relayed from another is in before the next.
   */
  pullNow(only?: string, maxProbes = 50): Promise<PullResult[]> {
    return this.track(async () => {
      const targets = only === undefined ? (await this.peers()).map((p) => p.url) : [only];
      const results: PullResult[] = [];
      for (const url of targets) {
        let total: PullResult | undefined;
        for (let probes = 1; probes <= maxProbes; probes++) {
          // Between two probes the sweep holds none: `close` may have begun meanwhile.
          this.refuseIfClosing();
          const r = await this.probe(url);
          total = { ...r, pulled: (total?.pulled ?? 0) + r.pulled, rejected: (total?.rejected ?? 0) + r.rejected, probes };
          if (r.caught_up || !r.reachable || r.error !== null) break;
        }
        results.push(total!);
      }
      return results;
    });
  }

  probe(url: string): Promise<ProbeResult> {
    const running = this.probing.get(url);
    if (running) return running;
    const run = this.track(() => this.probeOnce(url)).finally(() => this.probing.delete(url));
    this.probing.set(url, run);
    return run;
  }

  /**
   * Starts no probe from now on, and resolves once every probe and sweep under way has settled:
   * the relay closes its store after this, and nothing of the federation may touch it then. A
   * probe running is waited for (each of its requests is bounded by `requestTimeoutMs`); a sweep
   * that has not started its probes, or is between two, stops with `FederationClosedError`.
   */
  async close(): Promise<void> {
    this.closing = true;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Runs `work` as a probe or sweep `close` waits for; refused once `close` began. */
  private track<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new FederationClosedError());
    const run = work();
    this.running.add(run);
    const forget = () => this.running.delete(run);
    run.then(forget, forget);
    return run;
  }

  private refuseIfClosing(): void {
    if (this.closing) throw new FederationClosedError();
  }

  /** Public view of a peer for /relays and /reach. */
  static view(p: PeerRow): Record<string, unknown> {
    return {
      url: p.url,
      node_id: p.node_id,
      version: p.version,
      reachable: p.reachable === null ? null : p.reachable === 1,
      last_probe_at: p.last_probe_ms === null ? null : isoFromMs(p.last_probe_ms),
      last_error: p.last_error,
      cursor: p.cursor,
      pulled_events: p.pulled_events,
      rejected_events: p.rejected_events,
      offences: p.offences,
      last_offence: p.last_offence,
      suspended_at: p.suspended_ms === null ? null : isoFromMs(p.suspended_ms),
      added_at: isoFromMs(p.added_ms),
    };
  }

  private async probeOnce(url: string): Promise<ProbeResult> {
    const peers = this.o.store.plainData.peers;
    const known = await this.peer(url);
    if (!known) throw new RelayRefusal('peer_unknown', 'not a known peer; POST /reach first');
    if (known.suspended_ms !== null) {
      // Nothing is fetched and nothing written: the peer keeps its record until an operator acts.
      const error = `suspended at ${isoFromMs(known.suspended_ms)} after ${known.offences} refused documents (last: ${known.last_offence ?? 'none'}); not pulled from until an operator adds it again with POST /reach`;
      return { url, reachable: false, node_id: known.node_id, version: known.version, pulled: 0, rejected: 0, cursor: known.cursor, caught_up: false, error };
    }
    let pulled = 0;
    let rejected = 0;
    let error: string | null = null;
    let reachable = false;
    let nodeId: string | null = null;
    let version: string | null = null;
    let caughtUp = false;
    try {
      // Checked at every probe, not only when added: a stored peer may predate the rule, and a name may now resolve elsewhere.
      const problem = await this.targetProblem(url);
      if (problem !== null) throw new Error(`not probed: ${problem} (peers added over HTTP must be public addresses)`);
      const health = await this.exchange.getJson(`${url}/health`, PEER_HEALTH_MAX_BYTES);
      const h = health as { protocol?: unknown; node_id?: unknown; version?: unknown };
      if (h.protocol !== relayProtocol) throw new Error(`${url}/health does not report protocol ${relayProtocol}`);
      reachable = true;
      // A configured peer's node joins the relay node's default slice (decision 0402): a key the
      // relay cannot sign a slice with made every vote it answered with its own statements fail.
      const idProblem = h.node_id === undefined || h.node_id === null ? null : nodeIdProblem(h.node_id);
      nodeId = idProblem === null && typeof h.node_id === 'string' ? h.node_id : null;
      if (idProblem !== null) error = `${url}/health reports a node_id this relay cannot take (${idProblem}); not recorded`;
      const versionProblem = peerVersionProblem(h.version);
      version = versionProblem === null && typeof h.version === 'string' ? h.version : null;
      if (versionProblem !== null) error ??= `${url}/health reports a version this relay does not keep (${versionProblem}); not recorded`;
      await peers.recordIdentity(url, nodeId, version);
      for (let page = 0; page < this.maxPages; page++) {
        // `transient`: why the page stopped early on a failure that may pass (the cursor stays before it).
        const { events, files, next, hasMore, transient } = await this.pages.read(url, (await this.peer(url))!.cursor);
        const offences: string[] = [];
        const ingest = this.ingest;
        const cursors = this.o.store.data.peers;
        await this.o.store.tx(function* () {
          let stored = 0;
          for (const ev of events) {
            const outcome = yield* ingest.ingest(ev, url, files);
            if (outcome.kind === 'stored') stored++;
            else {
              rejected++;
              error = `event ${String(ev.seq)} (${eventKindLabel(ev.kind)}): ${outcome.reason}`;
              if (outcome.kind === 'refused') offences.push(error);
            }
          }
          pulled += stored;
          yield* cursors.advanceCursor(url, next, stored);
        });
        if (offences.length > 0 && (await this.recordOffences(url, offences.length, offences.at(-1)!, offences))) {
          error = `suspended: ${offences.length} refused documents in this page brought it to ${(await this.peer(url))!.offences} (the bound is ${this.offenceLimit}); last: ${offences.at(-1)!}`;
          break;
        }
        if (transient !== null) {
          error = transient;
          break;
        }
        if (!hasMore || events.length === 0) {
          caughtUp = true;
          break;
        }
      }
    } catch (cause) {
      error = cause instanceof Error ? cause.message : String(cause);
      if (!reachable) this.o.log(`relay: peer ${url} unreachable`, cause);
    }
    await peers.recordProbe(url, { nowMs: this.o.clock.nowMs(), reachable, error, rejectedEvents: rejected });
    return { url, reachable, node_id: nodeId, version, pulled, rejected, cursor: (await this.peer(url))!.cursor, caught_up: caughtUp, error };
  }

  /**
   * Counts refused documents against a peer's standing and logs each; returns whether the peer is
   * now suspended (at `offenceLimit` or more since an operator last added it).
   */
  private async recordOffences(url: string, count: number, last: string, each: readonly string[] = [last]): Promise<boolean> {
    for (const reason of each) this.warn(`relay: refused a document from peer ${url}: ${reason}`);
    const suspended = await this.o.store.plainData.peers.recordOffences(url, { count, last, nowMs: this.o.clock.nowMs(), limit: this.offenceLimit });
    if (suspended) this.warn(`relay: peer ${url} suspended after ${(await this.peer(url))!.offences} refused documents; an operator adds it again with POST /reach`);
    return suspended;
  }
}

/** A probe or sweep asked for, or going on to its next probe, after the relay began to close. */
export class FederationClosedError extends Error {
  constructor() {
    super('the relay is closing: federation starts no further probe (its store closes next)');
    this.name = 'FederationClosedError';
  }
}
