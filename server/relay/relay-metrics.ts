import type { RequestHandler } from 'express';
import { Counter, Gauge, Registry } from 'prom-client';
import type { ConnectionCounts } from '../http/connection-cap.js';
import { HttpError } from '../http/http-error.js';
import { bearerToken, sameSecret } from '../http/same-secret.js';
import { connectionMetrics } from '../http/connection-metrics.js';
import { httpMetrics, type RequestDone } from '../http/http-metrics.js';
import { RATE_LIMITS, type RateLimitName, type RelayCounts, VOTE_OUTCOMES, VOTE_REFUSALS } from './domain/relay-counts.js';
import type { RelayStore } from './relay-store.js';
import type { PeerRow } from '../storage/relay/peer-repository.js';

/**
 * The relay's Prometheus metrics (`GET /metrics`, decision 1060), in a registry of its own (a process
 * may hold several relays, as tests do). As the bench's (bench-metrics.ts): what every replica
 * shares (items, nodes, peers and their last probe) is read from the store when scraped, by plain
 * reads that walk no table on SQLite and wait for no rule on PostgreSQL, never under the write lock;
 * what happens in this process (HTTP requests, votes taken and refused, rate-limit refusals, write
 * transactions, WAL syncs, the connection cap) is counted as it happens, so each replica reports
 * its own share.
 */
export function relayMetrics(deps: { store: RelayStore; counts: RelayCounts; connections?: ConnectionCounts }): {
  registry: Registry;
  onRequestDone: (done: RequestDone) => void;
} {
  const registry = new Registry();
  const { store, counts } = deps;
  // The shared HTTP layer under the bench's names: one meaning, one dashboard; the scrape target
  // (job, instance) tells the services apart.
  const onRequestDone = httpMetrics(registry);
  if (deps.connections) connectionMetrics(registry, deps.connections);

  // Counted in plain integers on the way (relay-counts.ts) and copied here when scraped: a counter
  // has no set, so each is reset and raised to the count (as connection-metrics.ts does).
  new Counter({
    name: 'hilbench_relay_votes_total',
    help: 'Signed votes POST /items/{id}/vote took on this replica, by outcome: stored (a new statement), equivocation (a second value in one phase, kept as evidence), duplicate (idempotent, nothing stored).',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const outcome of VOTE_OUTCOMES) this.inc({ outcome }, counts.votes[outcome]);
    },
  });
  new Counter({
    name: 'hilbench_relay_votes_refused_total',
    help: 'Votes POST /items/{id}/vote refused on this replica, by reason: unknown_item, malformed, wrong_item, clock_ahead, bad_signature, unregistered_voter, unknown_slice, other. Bodies that do not parse are in hilbench_http_requests_total.',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const reason of VOTE_REFUSALS) this.inc({ reason }, counts.voteRefusals[reason]);
    },
  });
  new Counter({
    name: 'hilbench_relay_rate_limited_total',
    help: 'Requests refused 429 on this replica by a per-client limit on unauthenticated writes: registrations (POST /register), sign_ins (session, login, recovery).',
    labelNames: ['limit'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const limit of RATE_LIMITS) this.inc({ limit }, counts.rateLimited[limit]);
    },
  });
  new Counter({
    name: 'hilbench_relay_write_transactions_total',
    help: 'Write transactions this replica committed (on SQLite a write outside a transaction counts as one; on PostgreSQL only transactions count). Votes share them (group commit, decision 0404).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(store.commits);
    },
  });
  // SQLite only: PostgreSQL syncs its own commits, and its failures are the database's to report.
  if (store.walSyncs !== null) {
    new Counter({
      name: 'hilbench_relay_wal_syncs_total',
      help: "fdatasyncs of the relay database's WAL that completed: every answer waits for one begun after its commit, and commits made during one sync share the next (decision 0480).",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(store.walSyncs ?? 0);
      },
    });
    new Gauge({
      name: 'hilbench_relay_wal_sync_failed',
      help: '1 once a sync of the WAL failed: every answer but /metrics is then a 503 until the relay restarts (decision 0480); else 0.',
      registers: [registry],
      collect() {
        this.set(store.syncFailure === null ? 0 : 1);
      },
    });
  }

  new Counter({
    name: 'hilbench_relay_registrations_total',
    help: 'Nodes registered on this replica by POST /register (a registration sent again is no new node).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counts.registrations);
    },
  });

  storeMetrics(registry, store);
  return { registry, onRequestDone };
}

/**
 * The store-wide metrics, read when scraped: one read of the store per scrape, shared by them all,
 * beside the queue of rules on PostgreSQL (a vote never waits for a scrape) and walking no table
 * (the counts GET /network shows, `RelayCountRepository`, decision 1100: COUNT(*) cost SQLite's
 * event loop 20 ms per 100 000 rows each, a second at a million). Nodes are not split by where they
 * registered: registrations_total counts those registered on each replica. When the read fails
 * (the database away), these have no series (items and nodes: NaN) and
 * `hilbench_relay_store_read_failed` is 1; the per-replica metrics still answer.
 */
function storeMetrics(registry: Registry, store: RelayStore): void {
  const snapshot = oncePerScrape(async () => {
    try {
      const [{ items, nodes }, peers] = await Promise.all([store.readBeside(store.data.counts.totals()), store.readBeside(store.data.peers.all())]);
      return { items, nodes, peers };
    } catch {
      return null;
    }
  });
  type Snapshot = NonNullable<Awaited<ReturnType<typeof snapshot>>>;
  /** A metric filled from the snapshot by `fill`, with no series when the read failed. */
  const fromStore = <M extends Gauge | Counter>(metric: (collect: (this: M) => Promise<void>) => M, fill: (metric: M, read: Snapshot) => void) =>
    metric(async function (this: M) {
      const read = await snapshot();
      this.reset();
      if (read !== null) fill(this, read);
    });
  new Gauge({
    name: 'hilbench_relay_store_read_failed',
    help: "1 when this scrape could not read the relay's store (the database away: the store-wide metrics then have no series), else 0.",
    registers: [registry],
    async collect() {
      this.set((await snapshot()) === null ? 1 : 0);
    },
  });
  const gauge = (name: string, help: string, labelNames: readonly string[] = []) => (collect: (this: Gauge) => Promise<void>) => new Gauge({ name, help, labelNames, registers: [registry], collect });
  const counter = (name: string, help: string, labelNames: readonly string[]) => (collect: (this: Counter) => Promise<void>) => new Counter({ name, help, labelNames, registers: [registry], collect });
  // A gauge without labels always has its one series (prom-client's reset sets it to 0): NaN, not a
  // count of 0, when the read failed.
  const count = (name: string, help: string, of: (read: Snapshot) => number) =>
    gauge(name, help)(async function () {
      const read = await snapshot();
      this.set(read === null ? Number.NaN : of(read));
    });
  count('hilbench_relay_items', 'Items (claims and files) stored on the relay (all replicas), posted here or pulled from peers.', (read) => read.items);
  count('hilbench_relay_nodes', 'Nodes the relay knows (all replicas): registered here, pulled from peers, and the relay node itself.', (read) => read.nodes);
  fromStore(gauge('hilbench_relay_peers', 'Peer relays this relay federates with, by standing: active (probed and pulled from) or suspended (after too many refused documents, until an operator adds it again).', ['standing']), (m, read) => {
    const suspended = read.peers.filter((p) => p.suspended_ms !== null).length;
    m.set({ standing: 'active' }, read.peers.length - suspended);
    m.set({ standing: 'suspended' }, suspended);
  });
  // One series per peer URL: peers are few, and only operators add them (POST /reach).
  const perPeer = (value: (p: PeerRow) => number | null) => (put: (peer: string, v: number) => void, read: Snapshot) => {
    for (const p of read.peers) {
      const v = value(p);
      if (v !== null) put(p.url, v);
    }
  };
  const peerGauge = (name: string, help: string, value: (p: PeerRow) => number | null) => fromStore(gauge(name, help, ['peer']), (m, read) => perPeer(value)((peer, v) => m.set({ peer }, v), read));
  const peerCounter = (name: string, help: string, value: (p: PeerRow) => number) => fromStore(counter(name, help, ['peer']), (m, read) => perPeer(value)((peer, v) => m.inc({ peer }, v), read));
  peerGauge('hilbench_relay_peer_reachable', "1 when the peer's /health answered at its last probe, else 0 (no series before its first probe).", (p) => p.reachable);
  peerGauge('hilbench_relay_peer_last_probe_timestamp_seconds', 'When the peer was last probed and pulled from, by any replica (Unix seconds; its age: time() minus this).', (p) => (p.last_probe_ms === null ? null : p.last_probe_ms / 1000));
  peerGauge('hilbench_relay_peer_last_probe_failed', 'Whether the last probe of the peer ended with an error (unreachable, a refused event, a page cut short: GET /reach says which): 1, else 0.', (p) => (p.last_probe_ms === null ? null : p.last_error === null ? 0 : 1));
  peerGauge('hilbench_relay_peer_suspended', '1 while the peer is suspended for refused documents (not pulled from until an operator adds it again), else 0.', (p) => (p.suspended_ms === null ? 0 : 1));
  peerCounter('hilbench_relay_peer_events_pulled_total', 'Events pulled from the peer and stored, by every replica.', (p) => p.pulled_events);
  peerCounter('hilbench_relay_peer_events_rejected_total', 'Events from the peer that were not stored (refused documents, or ones this relay cannot keep), by every replica.', (p) => p.rejected_events);
}

/**
 * `GET /metrics`: open by default (counts, and peer URLs GET /reach shows anyway); with `token`, a
 * bearer scrape compared in constant time, as the bench's (decision 1060).
 */
export function metricsHandler(options: { registry: Registry; store: RelayStore; token?: string | undefined }): RequestHandler {
  const { registry, store, token: expected } = options;
  return async (req, res) => {
    const token = bearerToken(req.get('authorization'));
    if (expected !== undefined && expected !== '' && (token === undefined || !sameSecret(token, expected))) {
      throw new HttpError(401, 'metrics token required: send "authorization: Bearer <metrics token>"', { 'WWW-Authenticate': 'Bearer' });
    }
    // The store's counts as they are on disk: nothing is shown before it is durable (decision
    // 0480). After a failed sync they are read all the same: the scrape is how it is seen.
    await store.whenDurable()?.catch(() => {});
    res.type(registry.contentType).send(await registry.metrics());
  };
}

/** `handler` (a rate limit, server/http/rate-limit.ts) with each of its refusals counted under `limit`. */
export function countRefusals(counts: RelayCounts, limit: RateLimitName, handler: RequestHandler): RequestHandler {
  return (req, res, next) =>
    handler(req, res, (err?: unknown) => {
      if (err !== undefined) counts.rateLimited[limit]++;
      next(err);
    });
}

/**
 * `read`, shared by every caller while one is in flight: one read per scrape for all the gauges
 * that need it. prom-client starts every metric's collect in one synchronous pass, and even a read
 * that settled at once (SQLite's plain reads) clears only in a later microtask, after that pass.
 */
function oncePerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  const clear = () => {
    inFlight = null;
  };
  return () => {
    if (inFlight) return inFlight;
    inFlight = read();
    inFlight.then(clear, clear);
    return inFlight;
  };
}
