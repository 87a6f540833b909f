import { createClock } from '@sinonjs/fake-timers';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { generateNodeKey, type NodeKey } from '../../core/relay/node-id.js';
import { listen } from '../../server/http/listen.js';
import { memoryLogger } from '../../server/http/logger.js';
import { createRelayService, type RelayService } from '../../server/relay/relay-service.js';
import { HilbenchProcesses, until } from '../support/hilbench-processes.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { call, registrationFor, tempDataDir, voteBy, type TestNode } from '../support/relay-test-kit.js';

/**
 * Relay replicas on one PostgreSQL database (issue 10, decision 0440): whichever replica a client
 * reaches, it sees what went through the other, the event feed pages through both with no gap and
 * no duplicate, and when one replica goes away mid-way the other carries on with everything it
 * accepted. The replicas share one public address, as behind a load balancer: documents name it.
 */

const PUBLIC_URL = 'http://relay.replicas.test';
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Replica {
  /** Where this replica listens (its own port); documents name PUBLIC_URL. */
  address: string;
  service: RelayService;
  close(): Promise<void>;
}

async function startReplica(databaseUrl: string): Promise<Replica> {
  const data = tempDataDir('relay-replica-');
  const listening = await listen({ port: 0 });
  const service = await createRelayService({
    clock,
    dataDir: data.dir,
    databaseUrl,
    baseUrl: PUBLIC_URL,
    humanUrl: PUBLIC_URL,
    logger: memoryLogger(),
    rateLimits: { registrationsPerMinute: 100_000, signInsPerMinute: 100_000 },
  });
  listening.server.on('request', service.app);
  let closed = false;
  const replica: Replica = {
    address: listening.origin,
    service,
    close: async () => {
      if (closed) return;
      closed = true;
      await listening.close();
      await service.close();
      data.remove();
    },
  };
  cleanups.push(() => replica.close());
  return replica;
}

async function twoReplicas(): Promise<[Replica, Replica, string]> {
  const database = await createTestDatabase({ migrated: 'relay' });
  cleanups.push(database.drop);
  const a = await startReplica(database.url);
  const b = await startReplica(database.url);
  return [a, b, database.url];
}

async function register(replica: Replica, name: string, key: NodeKey = generateNodeKey()): Promise<TestNode> {
  const answer = await call(replica.address, 'POST', '/register', { body: registrationFor(key, PUBLIC_URL, clock, name) });
  expect(answer.status, answer.text).toBe(201);
  return { ...key, auth: String(answer.body.authorization) };
}

async function postItem(replica: Replica, node: TestNode, title: string): Promise<string> {
  const answer = await call(replica.address, 'POST', '/items', { body: { kind: 'statement', title, body: '' }, auth: node.auth });
  expect(answer.status, answer.text).toBe(201);
  return String(answer.body.id);
}

interface Page {
  events: { seq: number; kind: string; subject: string }[];
  next: number;
  has_more: boolean;
}

/** The whole feed through `replica`, page by page. */
async function wholeFeed(replica: Replica, limit = 500): Promise<Page['events']> {
  const out: Page['events'] = [];
  let since = 0;
  for (;;) {
    const page = await call<Page>(replica.address, 'GET', `/events?since=${since}&limit=${limit}`);
    expect(page.status).toBe(200);
    out.push(...page.body.events);
    since = page.body.next;
    if (!page.body.has_more) return out;
  }
}

describe('relay replicas sharing PostgreSQL', () => {
  it('are one relay: the same node, keys and credentials; what goes through one is seen through the other', { timeout: 60_000 }, async () => {
    const [a, b] = await twoReplicas();
    expect(b.service.nodeId).toBe(a.service.nodeId);
    const alice = await register(a, 'alice');
    // A credential issued by one replica works on the other (one server key, in the database).
    const me = await call(b.address, 'GET', '/me', { auth: alice.auth });
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ caller: 'human', node: { node_id: alice.nodeId, name: 'alice' } });
    const id = await postItem(b, alice, 'posted through b');
    const seen = await call(a.address, 'GET', `/items/${id}`);
    expect(seen.status, seen.text).toBe(200);
    expect(seen.body).toMatchObject({ id, title: 'posted through b', author: alice.nodeId });
  });

  it('serve a file uploaded through one replica from the other, byte for byte', { timeout: 60_000 }, async () => {
    const [a, b] = await twoReplicas();
    const alice = await register(a, 'alice');
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 7) % 256);
    const form = new FormData();
    form.append('title', 'firmware');
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'firmware.bin');
    const uploaded = await call(a.address, 'POST', '/items', { rawBody: form, auth: alice.auth });
    expect(uploaded.status, uploaded.text).toBe(201);
    const response = await fetch(`${b.address}/items/${String(uploaded.body.id)}`, { headers: { accept: 'application/octet-stream' } });
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  });

  it('tally every vote whichever replica took it: bulletins agree, and none answers from a stale cache', { timeout: 60_000 }, async () => {
    const [a, b] = await twoReplicas();
    const voters = [await register(a, 'v0'), await register(b, 'v1'), await register(a, 'v2')];
    // Each voter trusts the other two (itself is implicit).
    const sliceOf = (voter: TestNode) => ({ t: 2, v: voters.filter((v) => v !== voter).map((v) => v.nodeId), i: [] });
    const id = await postItem(a, voters[0] as TestNode, 'a question');
    const bulletin = async (replica: Replica, voter: TestNode) => {
      const answer = await call(replica.address, 'GET', `/items/${id}/bulletin/${voter.nodeId}`);
      expect(answer.status, answer.text).toBe(200);
      return answer.body;
    };
    const vote = async (replica: Replica, voter: TestNode, phase: 'vote' | 'accept') => {
      const answer = await call(replica.address, 'POST', `/items/${id}/vote`, { body: voteBy(voter, id, 'yes', phase, sliceOf(voter), clock) });
      expect(answer.status, answer.text).toBe(201);
    };
    await vote(a, voters[0] as TestNode, 'vote');
    // Both replicas read (and cache) the item's statements now.
    expect(await bulletin(a, voters[0] as TestNode)).toMatchObject({ counts: { yes: { vote: 1 } } });
    expect(await bulletin(b, voters[0] as TestNode)).toMatchObject({ counts: { yes: { vote: 1 } } });
    // A vote through b: a must not answer from what it cached before.
    await vote(b, voters[1] as TestNode, 'vote');
    expect(await bulletin(a, voters[0] as TestNode)).toMatchObject({ counts: { yes: { vote: 2 } } });
    await vote(a, voters[2] as TestNode, 'vote');
    for (const voter of voters) await vote(voter === voters[1] ? b : a, voter, 'accept');
    for (const voter of voters) {
      const throughA = await bulletin(a, voter);
      expect(await bulletin(b, voter)).toEqual(throughA);
      expect(throughA).toMatchObject({ counts: { yes: { vote: 3, accept: 3 } } });
    }
  });

  it("answer another node's bulletin, kept between reads, anew after a slice published through the other (decision 1080)", { timeout: 60_000 }, async () => {
    const [a, b] = await twoReplicas();
    const [voter, watcher] = [await register(a, 'voter'), await register(b, 'watcher')];
    const id = await postItem(a, voter, 'a question');
    const accept = await call(a.address, 'POST', `/items/${id}/vote`, { body: voteBy(voter, id, 'yes', 'accept', { t: 1, v: [watcher.nodeId], i: [] }, clock) });
    expect(accept.status, accept.text).toBe(201);
    const bulletin = async () => {
      const answer = await call(a.address, 'GET', `/items/${id}/bulletin/${watcher.nodeId}`);
      expect(answer.status, answer.text).toBe(200);
      return answer.body;
    };
    // The watcher signed nothing and published no slice: uncommitted, read twice through a (the second a lookup).
    expect(await bulletin()).toMatchObject({ state: 'uncommitted' });
    expect(await bulletin()).toMatchObject({ state: 'uncommitted' });
    // Through b, the watcher trusts the voter alone: the voter's accept blocks it, and the two (the
    // voter trusts the watcher) are a quorum of accepters. a must not answer from what it kept.
    const published = await call(b.address, 'POST', '/slice', { body: { t: 1, v: [voter.nodeId] }, auth: watcher.auth });
    expect(published.status, published.text).toBe(200);
    expect(await bulletin()).toMatchObject({ state: 'confirmed', value: 'yes', accepted_via: 'v-blocking' });
  });

  it('page the event feed through both with no gap and no duplicate while both take writes', { timeout: 120_000 }, async () => {
    const [a, b] = await twoReplicas();
    const writers = await Promise.all([register(a, 'w0'), register(b, 'w1'), register(a, 'w2'), register(b, 'w3')]);
    const perWriter = 15;
    let writing = true;
    const written = Promise.all(
      writers.map(async (w, wi) => {
        for (let i = 0; i < perWriter; i++) await postItem(wi % 2 === 0 ? a : b, w, `w${wi} item ${i}`);
      }),
    ).finally(() => (writing = false));
    // A reader alternates replicas page by page, with a small page, the whole time and then to the end.
    const seen: Page['events'] = [];
    let since = 0;
    for (let turn = 0; ; turn++) {
      const stillWriting = writing;
      const page = await call<Page>((turn % 2 === 0 ? a : b).address, 'GET', `/events?since=${since}&limit=7`);
      expect(page.status).toBe(200);
      seen.push(...page.body.events);
      since = page.body.next;
      if (!stillWriting && !page.body.has_more) break;
    }
    await written;
    const seqs = seen.map((e) => e.seq);
    expect(new Set(seqs).size, 'a duplicate event').toBe(seqs.length);
    expect(seqs, 'events out of order').toEqual([...seqs].sort((x, y) => x - y));
    expect(seen).toEqual(await wholeFeed(a));
    expect(seen.filter((e) => e.kind === 'item')).toHaveLength(writers.length * perWriter);
  });

  it('carry on through one replica when the other goes away mid-way, keeping everything it accepted', { timeout: 120_000 }, async () => {
    const [a, b, databaseUrl] = await twoReplicas();
    const alice = await register(a, 'alice');
    const accepted: string[] = [];
    for (let i = 0; i < 10; i++) accepted.push(await postItem(i % 2 === 0 ? a : b, alice, `before ${i}`));
    await b.close();
    await expect(call(b.address, 'GET', '/me', { auth: alice.auth })).rejects.toThrow();
    for (let i = 0; i < 5; i++) accepted.push(await postItem(a, alice, `after ${i}`));
    const items = (await wholeFeed(a)).filter((e) => e.kind === 'item').map((e) => e.subject);
    expect(items).toEqual(accepted);
    // A replica started again on the same database serves all of it too.
    const c = await startReplica(databaseUrl);
    expect((await wholeFeed(c)).filter((e) => e.kind === 'item').map((e) => e.subject)).toEqual(accepted);
  });
});

// Processes: two `hilbench serve --database-url` replicas, one killed with SIGKILL while it takes writes.
const processes = new HilbenchProcesses();
afterAll(async () => {
  await processes.killAll();
});

describe('a relay replica killed with SIGKILL', () => {
  it('loses nothing it accepted: the other replica serves all of it and carries on', { timeout: 180_000 }, async () => {
    // Empty: both replicas migrate it, together (below).
    const database = await createTestDatabase({ migrated: 'none' });
    cleanups.push(database.drop);
    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-relay-replicas-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const replica = (name: string) =>
      processes.start(
        ['serve', '--database-url', database.url, '--no-local-worker', '--port', '0', '--relay-port', '0', '--data-dir', path.join(dir, name), '--admin-token', 'relay-replicas-admin'],
        /hilbench relay service on (http:\/\/127\.0\.0\.1:\d+)/,
      );
    // Started together: migrations, the relay's keys and its own registration are made once.
    const [first, second] = await Promise.all([replica('a'), replica('b')]);
    const [urlA, urlB] = [first.match[1] as string, second.match[1] as string];
    // Registered through b (each replica here has its own address, and a registration names the one it is sent to).
    const key = generateNodeKey();
    const registered = await call(urlB, 'POST', '/register', { body: registrationFor(key, urlB, systemClock, 'alice') });
    expect(registered.status, registered.text).toBe(201);
    const auth = String(registered.body.authorization);
    const accepted: string[] = [];
    let n = 0;
    const post = async (url: string) => {
      const answer = await call(url, 'POST', '/items', { body: { kind: 'statement', title: `item ${n++}`, body: '' }, auth });
      if (answer.status !== 201) throw new Error(`POST /items answered ${answer.status}: ${answer.text}`);
      accepted.push(String(answer.body.id));
    };
    // A writes without pause until it is killed; b writes beside it.
    let killed = false;
    const writingToA = (async () => {
      while (!killed) {
        try {
          await post(urlA);
        } catch (err) {
          if (!killed) throw err;
        }
      }
    })();
    await until('replica a to accept 20 items', () => accepted.length >= 20, 30_000);
    for (let i = 0; i < 5; i++) await post(urlB);
    killed = true;
    first.child.kill('SIGKILL');
    await first.child;
    await writingToA;
    for (let i = 0; i < 5; i++) await post(urlB);

    const feed: { seq: number; kind: string; subject: string }[] = [];
    for (let since = 0; ; ) {
      const page = await call<{ events: typeof feed; next: number; has_more: boolean }>(urlB, 'GET', `/events?since=${since}&limit=50`);
      expect(page.status).toBe(200);
      feed.push(...page.body.events);
      since = page.body.next;
      if (!page.body.has_more) break;
    }
    const seqs = feed.map((e) => e.seq);
    expect(seqs, 'events in seq order, none twice').toEqual([...new Set(seqs)].sort((x, y) => x - y));
    const items = new Set(feed.filter((e) => e.kind === 'item').map((e) => e.subject));
    expect(accepted.filter((id) => !items.has(id)), 'accepted items missing from the feed').toEqual([]);
    for (const id of accepted.slice(0, 3)) expect((await call(urlB, 'GET', `/items/${id}`)).status).toBe(200);
  });
});
