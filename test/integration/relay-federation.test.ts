import { createHash } from 'node:crypto';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey, type NodeKey } from '../../core/relay/node-id.js';
import { call, fileAuthorship, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

/**
 * Three relays on loopback, peered in a chain A - B - C (A and C never talk directly), converge to
 * the same nodes, items, votes and bulletins: each pulls its peers' feeds, verifies everything and
 * re-publishes it in its own feed.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const dirs = [tempDataDir(), tempDataDir(), tempDataDir()];
const humanKeys: NodeKey[] = [generateNodeKey(), generateNodeKey(), generateNodeKey()];
const relaySlice = { t: 2, v: humanKeys.map((k) => k.nodeId).sort(), i: [] };
let relays: RunningRelay[];
let humans: TestNode[];

async function syncRounds(rounds = 4): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (const [i, r] of relays.entries()) {
      const probe = await call<{ results: { reachable: boolean; rejected: number; error: string | null }[] }>(r.baseUrl, 'POST', '/reach/probe', { body: {}, auth: humans[i]!.auth });
      expect(probe.status).toBe(200);
      for (const result of probe.body.results) {
        expect(result.reachable).toBe(true);
        expect(result.rejected, String(result.error)).toBe(0);
      }
    }
  }
}

/** What must be equal on every relay. */
async function snapshot(r: RunningRelay, itemIds: string[]) {
  const nodes = ((await call(r.baseUrl, 'GET', '/nodes')).body.nodes as { node_id: string }[]).map((n) => n.node_id).sort();
  const items = [];
  let after = '';
  for (;;) {
    const page = await call<{ items: { id: string; title: string; type: string }[]; next: number | null }>(r.baseUrl, 'GET', `/items?limit=500${after}`);
    items.push(...page.body.items.map((i) => `${i.id} ${i.type} ${i.title}`));
    if (page.body.next === null) break;
    after = `&after=${page.body.next}`;
  }
  const votes: string[] = [];
  let since = 0;
  for (;;) {
    const page = await call<{ events: { kind: string; data: { vote?: { voter: string; item: string; value: string; phase: string; sig: string } } }[]; next: number; has_more: boolean }>(
      r.baseUrl,
      'GET',
      `/events?since=${since}&limit=500`,
    );
    for (const e of page.body.events) if (e.kind === 'vote') votes.push(`${e.data.vote!.voter} ${e.data.vote!.item} ${e.data.vote!.value} ${e.data.vote!.phase} ${e.data.vote!.sig}`);
    since = page.body.next;
    if (!page.body.has_more) break;
  }
  const bulletins: Record<string, unknown> = {};
  for (const id of itemIds) {
    for (const node of [...humans.map((h) => h.nodeId), ...relays.map((x) => x.service.nodeId)]) {
      bulletins[`${id} ${node}`] = (await call(r.baseUrl, 'GET', `/items/${id}/bulletin/${node}`)).body;
    }
  }
  return { nodes, items: items.sort(), votes: votes.sort(), bulletins };
}

beforeAll(async () => {
  // Loopback peers: each relay's human is its operator, and private peer addresses are allowed.
  relays = await Promise.all(
    dirs.map((d, i) => startRelayServer({ clock, dataDir: d.dir, logger: memoryLogger(), selfSlice: relaySlice, operators: [humanKeys[i]!.nodeId], allowPrivatePeers: true })),
  );
  humans = await Promise.all(relays.map((r, i) => registerNode(r, clock, { key: humanKeys[i]!, name: `human ${i}` })));
  // Chain: A <-> B <-> C.
  const peer = (from: number, to: number) => call(relays[from]!.baseUrl, 'POST', '/reach', { body: { url: relays[to]!.baseUrl }, auth: humans[from]!.auth });
  for (const [from, to] of [[0, 1], [1, 0], [1, 2], [2, 1]] as const) expect((await peer(from, to)).status).toBe(201);
});
afterAll(async () => {
  await Promise.all(relays.map((r) => r.close()));
  dirs.forEach((d) => d.remove());
});

describe('three relays on loopback', () => {
  it('converge to the same items, votes and bulletins, and the relays confirm together', async () => {
    const claim = await postClaim(relays[0]!, humans[0]!, { kind: 'statement', title: 'the pico bench prints hello at boot', body: 'seen 10/10' });
    await postClaim(relays[2]!, humans[2]!, { kind: 'question', title: 'should uno keep 9600 baud?', body: '' });
    const form = new FormData();
    const fileBytes = new TextEncoder().encode('hello\n'.repeat(1000));
    form.append('title', 'uart capture');
    form.append('authorship', JSON.stringify(fileAuthorship(humans[1]!, { id: createHash('sha256').update(fileBytes).digest('hex'), title: 'uart capture' })));
    form.append('file', new Blob([fileBytes]), 'uart.log');
    const file = await call(relays[1]!.baseUrl, 'POST', '/items', { rawBody: form, auth: humans[1]!.auth });
    expect(file.status).toBe(201);
    await syncRounds(3);

    // The claim from A reached C through B; the file from B reached both, bytes verified.
    expect((await call(relays[2]!.baseUrl, 'GET', `/items/${claim}`)).body).toMatchObject({ title: 'the pico bench prints hello at boot', origin: relays[1]!.baseUrl });
    const bytes = await fetch(`${relays[0]!.baseUrl}/items/${String(file.body.id)}`, { headers: { accept: 'application/octet-stream' } });
    expect(await bytes.text()).toBe('hello\n'.repeat(1000));

    // Each human votes yes at their own relay, trusting the other two (2 of 2).
    const sliceOf = (i: number) => ({ t: 2, v: humans.filter((_, j) => j !== i).map((h) => h.nodeId).sort(), i: [] });
    for (const [i, h] of humans.entries()) {
      const r = await call(relays[i]!.baseUrl, 'POST', `/items/${claim}/vote`, { body: voteBy(h, claim, 'yes', 'vote', sliceOf(i), clock) });
      expect(r.status).toBe(201);
    }
    await syncRounds(3);
    // Every human's client reads its bulletin and signs what it says to sign next.
    for (const [i, h] of humans.entries()) {
      const b = await call<{ to_emit: { value: 'yes' | 'no'; phase: 'accept' | 'confirm' }[] }>(relays[i]!.baseUrl, 'GET', `/items/${claim}/bulletin/${h.nodeId}`);
      expect(b.body.to_emit).toEqual([{ value: 'yes', phase: 'accept' }]);
      for (const s of b.body.to_emit) await call(relays[i]!.baseUrl, 'POST', `/items/${claim}/vote`, { body: voteBy(h, claim, s.value, s.phase, sliceOf(i), clock) });
    }
    await syncRounds(4);

    const items = ((await call(relays[0]!.baseUrl, 'GET', '/items')).body.items as { id: string }[]).map((i) => i.id);
    const snaps = await Promise.all(relays.map((r) => snapshot(r, items)));
    expect(snaps[0]!.items).toHaveLength(3);
    expect(snaps[0]!.nodes).toHaveLength(6);
    expect(snaps[1]).toEqual(snaps[0]);
    expect(snaps[2]).toEqual(snaps[0]);
    // Every relay node confirmed yes, and every relay agrees on it.
    for (const r of relays) {
      expect(snaps[0]!.bulletins[`${claim} ${r.service.nodeId}`]).toMatchObject({ state: 'confirmed', value: 'yes' });
    }
    // Nothing new arrives once converged.
    const before = await Promise.all(relays.map((r) => call(r.baseUrl, 'GET', '/network')));
    await syncRounds(1);
    const after = await Promise.all(relays.map((r) => call(r.baseUrl, 'GET', '/network')));
    expect(after.map((a) => a.body.counts)).toEqual(before.map((b) => b.body.counts));
  });

  it('reports reachability, and a peer that is down is marked unreachable without failing the probe', async () => {
    const extra = tempDataDir();
    const opKey = generateNodeKey();
    const lonely = await startRelayServer({ clock, dataDir: extra.dir, logger: memoryLogger(), operators: [opKey.nodeId], allowPrivatePeers: true });
    const op = await registerNode(lonely, clock, { key: opKey });
    const down = await startRelayServer({ clock, dataDir: tempDataDir().dir, logger: memoryLogger() });
    const downUrl = down.baseUrl;
    await down.close();
    try {
      await call(lonely.baseUrl, 'POST', '/reach', { body: { url: downUrl }, auth: op.auth });
      await call(lonely.baseUrl, 'POST', '/reach', { body: { url: relays[0]!.baseUrl }, auth: op.auth });
      const probe = await call<{ results: { url: string; reachable: boolean; pulled: number }[] }>(lonely.baseUrl, 'POST', '/reach/probe', { body: {}, auth: op.auth });
      expect(probe.status).toBe(200);
      const byUrl = Object.fromEntries(probe.body.results.map((r) => [r.url, r]));
      expect(byUrl[downUrl]!.reachable).toBe(false);
      expect(byUrl[relays[0]!.baseUrl]!.reachable).toBe(true);
      expect(byUrl[relays[0]!.baseUrl]!.pulled).toBeGreaterThan(0);
      const reach = await call<{ peers: { url: string; reachable: boolean; last_error: string | null }[] }>(lonely.baseUrl, 'GET', '/reach');
      expect(reach.body.peers.find((p) => p.url === downUrl)).toMatchObject({ reachable: false, last_error: expect.any(String) });
      const self = await call(lonely.baseUrl, 'POST', '/reach', { body: { url: lonely.baseUrl }, auth: op.auth });
      expect(self.status).toBe(422);
      const ftp = await call(lonely.baseUrl, 'POST', '/reach', { body: { url: 'ftp://example.org' }, auth: op.auth });
      expect(ftp.status).toBe(422);
      const unknown = await call(lonely.baseUrl, 'POST', '/reach/probe', { body: { url: 'http://127.0.0.1:9' }, auth: op.auth });
      expect(unknown.status).toBe(404);
    } finally {
      await lonely.close();
      extra.remove();
    }
  });
});

describe('operators', () => {
  it('when the relay names operators, only they may add or probe peers', async () => {
    const dir = tempDataDir();
    const operatorKey = generateNodeKey();
    const guarded = await startRelayServer({ clock, dataDir: dir.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], allowPrivatePeers: true });
    try {
      const operator = await registerNode(guarded, clock, { key: operatorKey });
      const someone = await registerNode(guarded, clock);
      const refused = await call(guarded.baseUrl, 'POST', '/reach', { body: { url: relays[0]!.baseUrl }, auth: someone.auth });
      expect(refused.status).toBe(403);
      expect((await call(guarded.baseUrl, 'POST', '/reach/probe', { body: {}, auth: someone.auth })).status).toBe(403);
      expect((await call(guarded.baseUrl, 'GET', '/relays')).body.relays).toEqual([]);
      expect((await call(guarded.baseUrl, 'POST', '/reach', { body: { url: relays[0]!.baseUrl }, auth: operator.auth })).status).toBe(201);
      expect((await call(guarded.baseUrl, 'POST', '/reach/probe', { body: {}, auth: operator.auth })).status).toBe(200);
    } finally {
      await guarded.close();
      dir.remove();
    }
  });
});
