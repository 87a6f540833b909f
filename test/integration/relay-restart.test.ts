import { createClock } from '@sinonjs/fake-timers';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { createRelayService, type RelayService } from '../../server/relay/relay-service.js';
import { call, postClaim, registrationFor, relayStoreOptions, tempDataDir, voteBy } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

/** The relay's public address stays the same across restarts; the listening port does not matter. */
const baseUrl = 'http://relay.test';
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
const key = generateNodeKey();

async function open(): Promise<{ url: string; service: RelayService; close(): Promise<void> }> {
  // peer.test never resolves: private peers are allowed so the stored peer needs no DNS answer.
  const service = await createRelayService({ clock, dataDir: data.dir, ...(await relayStoreOptions(data.dir)), baseUrl, humanUrl: baseUrl, logger: memoryLogger(), operators: [key.nodeId], allowPrivatePeers: true });
  const server: Server = createServer(service.app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    service,
    close: async () => {
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
      await service.close();
    },
  };
}

afterAll(() => data.remove());

describe('state survives closing and reopening the same data dir', () => {
  it('keeps nodes, credentials, bots, items, files, votes, slices, peers and the event cursor', async () => {
    const first = await open();
    const relay = { baseUrl: first.url };
    // Registration documents name the public address, not the listening one.
    const registration = registrationFor(key, baseUrl, clock, 'persistent');
    const reg = await call(first.url, 'POST', '/register', { body: registration });
    expect(reg.status).toBe(201);
    const auth = String(reg.body.authorization);
    const bot = String((await call(first.url, 'POST', '/bots', { body: { name: 'b' }, auth })).body.authorization);
    const id = await postClaim(relay, auth, { kind: 'statement', title: 'survives restarts', body: '' });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array([1, 2, 3, 4])]), 'f.bin');
    const file = await call(first.url, 'POST', '/items', { rawBody: form, auth });
    await call(first.url, 'POST', `/items/${id}/vote`, { body: voteBy(key, id, 'yes', 'vote', { t: 1, v: [first.service.nodeId], i: [] }, clock) });
    await call(first.url, 'POST', '/slice', { body: { v: [first.service.nodeId] }, auth });
    expect((await call(first.url, 'POST', '/reach', { body: { url: 'http://peer.test' }, auth })).status).toBe(201);
    const before = await call<{ events: { seq: number }[]; next: number }>(first.url, 'GET', '/events?limit=500');
    const bulletinBefore = await call(first.url, 'GET', `/items/${id}/bulletin/${key.nodeId}`);
    const relayNode = first.service.nodeId;
    await first.close();

    const second = await open();
    try {
      expect(second.service.nodeId).toBe(relayNode);
      expect((await call(second.url, 'GET', '/me', { auth })).status).toBe(200);
      expect((await call(second.url, 'GET', '/bots/me', { auth: bot })).status).toBe(200);
      expect((await call(second.url, 'GET', `/items/${id}`)).body.title).toBe('survives restarts');
      const bytes = await fetch(`${second.url}/items/${String(file.body.id)}`, { headers: { accept: 'application/octet-stream' } });
      expect([...new Uint8Array(await bytes.arrayBuffer())]).toEqual([1, 2, 3, 4]);
      expect((await call(second.url, 'GET', `/items/${id}/bulletin/${key.nodeId}`)).body).toEqual(bulletinBefore.body);
      expect(((await call(second.url, 'GET', `/nodes/${key.nodeId}`)).body.slice as { hash: string }).hash).toMatch(/^[0-9a-f]{64}$/);
      expect(((await call(second.url, 'GET', '/relays')).body.relays as { url: string }[]).map((r) => r.url)).toEqual(['http://peer.test']);
      const after = await call<{ events: { seq: number }[] }>(second.url, 'GET', '/events?limit=500');
      expect(after.body.events).toEqual(before.body.events);
      // New events continue after the old ones; the relay node is not registered twice.
      await postClaim({ baseUrl: second.url }, auth, { kind: 'statement', title: 'after restart', body: '' });
      const newer = await call<{ events: { seq: number; kind: string }[] }>(second.url, 'GET', `/events?since=${before.body.next}`);
      expect(newer.body.events.map((e) => e.kind)).toEqual(['item']);
      expect(newer.body.events[0]!.seq).toBeGreaterThan(before.body.next);
      // A registration document used before the restart is still spent.
      expect((await call(second.url, 'POST', '/register', { body: registration })).status).toBe(409);
    } finally {
      await second.close();
    }
  });
});
