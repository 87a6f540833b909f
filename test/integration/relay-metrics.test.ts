import { createClock } from '@sinonjs/fake-timers';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { memoryLogger } from '../../server/http/logger.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { RELAY_WRITE_LOCK_KEY } from '../../server/storage/relay/pg-relay-engine.js';
import { until } from '../support/hilbench-processes.js';
import { call, postClaim, registerNode, registrationFor, relayDatabaseUrl, relayForTests, startRelayServer, tempDataDir, voteBy } from '../support/relay-test-kit.js';

/**
 * The relay's `GET /metrics` (decision 1060), scraped from a live relay after what it counts: votes
 * taken and refused by reason, registrations, the store's items, nodes and peers, the shared HTTP
 * metrics and the connection cap, write transactions and WAL syncs. Runs again on PostgreSQL
 * (test/integration/postgres/relay-metrics.postgres.test.ts), where the store-wide gauges read SQL there.
 */
const fake = createClock(Date.UTC(2026, 10, 30, 12));
const clock = clockFromFakeTimers(fake);
const { relay, alice, dataDir } = relayForTests({ clock, nodes: ['alice'], dataDirPrefix: 'relay-metrics-' });
const onSqlite = () => relayDatabaseUrl(dataDir) === undefined;

const scrape = async (origin: string, auth?: string) => {
  const answer = await call(origin, 'GET', '/metrics', auth === undefined ? {} : { auth });
  expect(answer.status, answer.text).toBe(200);
  return answer;
};
/** The value of one series (`name{labels}`, or `name` alone), or undefined when it is absent. */
const value = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('GET /metrics of the relay', () => {
  it('counts votes by outcome and refusal reason, registrations and items, and HTTP requests by route pattern', async () => {
    const slice = { t: 1, v: [relay.service.nodeId], i: [] };
    const before = (await scrape(relay.url)).text;
    // alice and the relay node itself.
    expect(value(before, 'hilbench_relay_nodes')).toBe(2);
    expect(value(before, 'hilbench_relay_registrations_total')).toBe(1);
    expect(value(before, 'hilbench_relay_items')).toBe(0);
    const bob = await registerNode(relay, clock, { name: 'bob' });
    const item = await postClaim(relay, alice.auth, { kind: 'question', title: 'metrics', body: '' });
    const post = (path: string, body: unknown) => call(relay.baseUrl, 'POST', path, { body });
    const vote = voteBy(alice, item, 'yes', 'vote', slice, clock);
    expect((await post(`/items/${item}/vote`, vote)).status).toBe(201);
    expect((await post(`/items/${item}/vote`, vote)).status).toBe(200);
    expect((await post(`/items/${item}/vote`, voteBy(bob, item, 'yes', 'vote', slice, clock))).status).toBe(201);
    expect((await post(`/items/${item}/vote`, voteBy(bob, item, 'no', 'vote', slice, clock))).status).toBe(201);
    // Refused: a tampered signature, an unregistered voter, an unknown item, a vote for another item, a body that does not parse.
    expect((await post(`/items/${item}/vote`, { ...vote, value: 'no' })).status).toBe(422);
    expect((await post(`/items/${item}/vote`, voteBy(generateNodeKey(), item, 'yes', 'vote', slice, clock))).status).toBe(403);
    expect((await post(`/items/${'9'.repeat(64)}/vote`, vote)).status).toBe(404);
    const other = await postClaim(relay, alice.auth, { kind: 'question', title: 'metrics, another', body: '' });
    expect((await post(`/items/${other}/vote`, vote)).status).toBe(422);
    const broken = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { rawBody: '{"voter":', headers: { 'content-type': 'application/json' } });
    expect(broken.status).toBe(422);

    const answer = await scrape(relay.url);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = answer.text;
    expect(value(text, 'hilbench_relay_votes_total{outcome="stored"}')).toBe(2);
    expect(value(text, 'hilbench_relay_votes_total{outcome="equivocation"}')).toBe(1);
    expect(value(text, 'hilbench_relay_votes_total{outcome="duplicate"}')).toBe(1);
    expect(value(text, 'hilbench_relay_votes_refused_total{reason="bad_signature"}')).toBe(1);
    expect(value(text, 'hilbench_relay_votes_refused_total{reason="unregistered_voter"}')).toBe(1);
    expect(value(text, 'hilbench_relay_votes_refused_total{reason="unknown_item"}')).toBe(1);
    expect(value(text, 'hilbench_relay_votes_refused_total{reason="wrong_item"}')).toBe(1);
    // Every reason has its series from the start, 0 until counted; a body that does not parse is no vote.
    expect(value(text, 'hilbench_relay_votes_refused_total{reason="clock_ahead"}')).toBe(0);
    expect(value(text, 'hilbench_relay_votes_refused_total{reason="malformed"}')).toBe(0);
    expect(value(text, 'hilbench_relay_items')).toBe(2);
    expect(value(text, 'hilbench_relay_nodes')).toBe(3);
    expect(value(text, 'hilbench_relay_registrations_total')).toBe(2);
    expect(value(text, 'hilbench_relay_rate_limited_total{limit="registrations"}')).toBe(0);
    // The shared HTTP layer under the bench's names, by route pattern (express's, as the bench's) and status.
    expect(value(text, 'hilbench_http_requests_total{method="POST",route="/items/:id/vote",status="201"}')).toBe(3);
    expect(value(text, 'hilbench_http_requests_total{method="POST",route="/items/:id/vote",status="200"}')).toBe(1);
    expect(value(text, 'hilbench_http_requests_total{method="POST",route="/items/:id/vote",status="422"}')).toBe(3);
    expect(value(text, 'hilbench_http_requests_total{method="POST",route="/register",status="201"}')).toBe(2);
    expect(value(text, 'hilbench_http_requests_total{method="GET",route="/metrics",status="200"}')).toBe(1);
    expect(value(text, 'hilbench_http_request_duration_seconds_count{method="POST",route="/items/:id/vote"}')).toBe(9);
    // The connection cap's counts of the server the relay listens on: the scrape's own connection is open.
    expect(value(text, 'hilbench_http_connections')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'hilbench_http_connections_refused_total')).toBe(0);
    // Write transactions on every store; WAL syncs and their failure on SQLite only.
    expect(value(text, 'hilbench_relay_write_transactions_total')).toBeGreaterThanOrEqual(6);
    if (onSqlite()) {
      expect(value(text, 'hilbench_relay_wal_syncs_total')).toBeGreaterThanOrEqual(1);
      expect(value(text, 'hilbench_relay_wal_sync_failed')).toBe(0);
    } else {
      expect(text).not.toContain('hilbench_relay_wal_sync');
    }
    // Never an item or a node id as a label.
    for (const id of [item, other, alice.nodeId, bob.nodeId, relay.service.nodeId]) expect(text).not.toContain(id);
  });

  it('reports each peer: standing, reachable, when last probed, whether that failed, events pulled', async () => {
    const peerData = tempDataDir('relay-metrics-peer-');
    const peer = await startRelayServer({ clock, dataDir: peerData.dir, logger: memoryLogger() });
    const unreachable = 'http://127.0.0.1:9';
    const data = tempDataDir('relay-metrics-fed-');
    const federated = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), peers: [peer.baseUrl, unreachable], allowPrivatePeers: true });
    try {
      await registerNode(peer, clock, { name: 'carol' });
      const before = (await scrape(federated.url)).text;
      expect(value(before, 'hilbench_relay_peers{standing="active"}')).toBe(2);
      expect(value(before, 'hilbench_relay_peers{standing="suspended"}')).toBe(0);
      // Not probed yet: no reachability, no probe time.
      expect(value(before, `hilbench_relay_peer_reachable{peer="${peer.baseUrl}"}`)).toBeUndefined();
      expect(value(before, `hilbench_relay_peer_suspended{peer="${peer.baseUrl}"}`)).toBe(0);
      fake.tick(5000);
      await federated.service.federation.probeAll();
      const text = (await scrape(federated.url)).text;
      expect(value(text, `hilbench_relay_peer_reachable{peer="${peer.baseUrl}"}`)).toBe(1);
      expect(value(text, `hilbench_relay_peer_last_probe_failed{peer="${peer.baseUrl}"}`)).toBe(0);
      expect(value(text, `hilbench_relay_peer_last_probe_timestamp_seconds{peer="${peer.baseUrl}"}`)).toBe(clock.nowMs() / 1000);
      // The peer's relay node and carol, with their registrations.
      expect(value(text, `hilbench_relay_peer_events_pulled_total{peer="${peer.baseUrl}"}`)).toBeGreaterThanOrEqual(2);
      expect(value(text, `hilbench_relay_peer_events_rejected_total{peer="${peer.baseUrl}"}`)).toBe(0);
      expect(value(text, `hilbench_relay_peer_reachable{peer="${unreachable}"}`)).toBe(0);
      expect(value(text, `hilbench_relay_peer_last_probe_failed{peer="${unreachable}"}`)).toBe(1);
      // Nodes pulled from the peer count among the nodes known, not among the registrations here.
      expect(value(text, 'hilbench_relay_nodes')).toBe(3);
      expect(value(text, 'hilbench_relay_registrations_total')).toBe(0);
    } finally {
      await federated.close();
      await peer.close();
      data.remove();
      peerData.remove();
    }
  });

  it('counts registrations refused by the rate limit, and asks for the metrics token when the relay has one', async () => {
    const data = tempDataDir('relay-metrics-limited-');
    const limited = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), rateLimits: { registrationsPerMinute: 1 }, metricsToken: 'scrape-me' });
    try {
      const register = () => call(limited.baseUrl, 'POST', '/register', { body: registrationFor(generateNodeKey(), limited.baseUrl, clock) });
      expect((await register()).status).toBe(201);
      expect((await register()).status).toBe(429);
      expect((await call(limited.url, 'GET', '/metrics')).status).toBe(401);
      expect((await call(limited.url, 'GET', '/metrics', { auth: 'Bearer wrong' })).status).toBe(401);
      const text = (await scrape(limited.url, 'Bearer scrape-me')).text;
      expect(value(text, 'hilbench_relay_rate_limited_total{limit="registrations"}')).toBe(1);
      expect(value(text, 'hilbench_relay_rate_limited_total{limit="sign_ins"}')).toBe(0);
      expect(value(text, 'hilbench_http_requests_total{method="POST",route="/register",status="429"}')).toBe(1);
      expect(value(text, 'hilbench_http_requests_total{method="GET",route="/metrics",status="401"}')).toBe(2);
    } finally {
      await limited.close();
      data.remove();
    }
  });

  it('on PostgreSQL, waits for no rule of the replica: a scrape is answered while a registration waits for the write lock', async (context) => {
    const databaseUrl = relayDatabaseUrl(dataDir);
    if (databaseUrl === undefined) return context.skip();
    const holder = new pg.Client(pgConnection(databaseUrl));
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1)', [RELAY_WRITE_LOCK_KEY]);
      const registering = call(relay.baseUrl, 'POST', '/register', { body: registrationFor(generateNodeKey(), relay.baseUrl, clock) });
      // The registration's transaction now holds the replica's queue of rules, waiting for the lock.
      await until('the registration to wait for the relay write lock', async () => {
        const { rows } = await holder.query<{ n: string }>("SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted", [RELAY_WRITE_LOCK_KEY]);
        return Number(rows[0]?.n) > 0;
      }, 10_000);
      // Read behind that queue, the scrape would wait as long as the lock is held.
      const text = (await scrape(relay.url)).text;
      expect(value(text, 'hilbench_relay_items')).toBe(2);
      expect(value(text, `hilbench_relay_registrations_total`)).toBe(2);
      await holder.query('COMMIT');
      expect((await registering).status).toBe(201);
    } finally {
      await holder.end();
    }
  });

  it('answers the scrape after a failed WAL sync, when every other answer is a 503 (SQLite: PostgreSQL syncs its own)', async (context) => {
    if (!onSqlite()) return context.skip();
    let failing = false;
    const data = tempDataDir('relay-metrics-sync-');
    const broken = await startRelayServer({
      clock,
      dataDir: data.dir,
      logger: memoryLogger(),
      syncFile: () => (failing ? Promise.reject(new Error('EIO: i/o error, fdatasync')) : Promise.resolve()),
    });
    try {
      failing = true;
      expect((await call(broken.baseUrl, 'POST', '/register', { body: registrationFor(generateNodeKey(), broken.baseUrl, clock) })).status).toBe(503);
      expect((await call(broken.baseUrl, 'GET', '/health')).status).toBe(503);
      const text = (await scrape(broken.url)).text;
      expect(value(text, 'hilbench_relay_wal_sync_failed')).toBe(1);
    } finally {
      await broken.close();
      data.remove();
    }
  });
});
