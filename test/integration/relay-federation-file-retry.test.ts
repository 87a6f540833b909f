import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { signItemAuthorship } from '../../core/relay/item-authorship.js';
import { signVote } from '../../core/relay/vote.js';
import { createRelayService, type RelayService } from '../../server/relay/relay-service.js';
import { signDocument } from '../../server/relay/domain/signed-document.js';
import { relayStoreOptions, tempDataDir } from '../support/relay-test-kit.js';
import { relayTableRows } from '../support/relay-tables.js';

/**
 * A file item whose download failed once used to be skipped for good, with every vote for
 * it. A transient failure now ends the page before the file's event (the cursor stays there);
 * only content that fails verification is skipped, as a rejected event with its reason.
 */
const peer = 'http://peer.test';
const server = setupServer();
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const peerNode = generateNodeKey();
const author = generateNodeKey();
const createdAt = Math.floor(fake.now / 1000);
const fileBytes = new TextEncoder().encode('firmware image v2');
const fileId = createHash('sha256').update(fileBytes).digest('hex');
const registration = signDocument({ schema: 'x.register/1', node_id: author.nodeId, relay: peer, created_at: createdAt, name: 'remote' }, author.secretKey);
const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: fileId, voter: author.nodeId, value: 'yes', phase: 'vote', slice: { t: 1, v: [peerNode.nodeId], i: [] }, created_at: createdAt }, author.secretKey);
const authorship = signItemAuthorship({ schema: 'x.item/1', item: fileId, type: 'file', author: author.nodeId, title: 'fw', media_type: 'application/octet-stream' }, author.secretKey);
const feed = [
  { seq: 1, kind: 'node', author: author.nodeId, subject: author.nodeId, data: { registration } },
  { seq: 2, kind: 'item', author: author.nodeId, subject: fileId, data: { item: { id: fileId, type: 'file', title: 'fw', bytes: fileBytes.length, media_type: 'application/octet-stream', author: author.nodeId, authorship } } },
  { seq: 3, kind: 'vote', author: author.nodeId, subject: fileId, data: { vote } },
];

/** The peer: health, its feed, and the file answered by `file` (called once per download). */
function peerServing(file: (attempt: number) => Response | Promise<Response>): { attempts: () => number } {
  let attempts = 0;
  server.use(
    http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
    http.get(`${peer}/events`, ({ request }) => {
      const since = Number(new URL(request.url).searchParams.get('since'));
      const events = feed.filter((e) => e.seq > since);
      return HttpResponse.json({ events, next: events.at(-1)?.seq ?? since, has_more: false });
    }),
    http.get(`${peer}/items/${fileId}`, () => file(++attempts)),
  );
  return { attempts: () => attempts };
}
const bytesResponse = () => new HttpResponse(fileBytes, { headers: { 'content-type': 'application/octet-stream' } });

let data: ReturnType<typeof tempDataDir>;
let relay: RelayService;
beforeEach(async () => {
  data = tempDataDir();
  relay = await createRelayService({ clock, dataDir: data.dir, ...(await relayStoreOptions(data.dir)), baseUrl: 'http://me.test', humanUrl: 'http://me.test', fetch: (...a) => fetch(...a), peers: [peer], peerRequestTimeoutMs: 1000, peerFileTimeoutMs: 60_000, logger: memoryLogger() });
});
afterEach(async () => {
  await relay.close();
  data.remove();
});

/** The rows of `table` about the file item, read from the relay's database on the side to see what it stored. */
async function rowsAboutFile(table: 'items' | 'votes'): Promise<number> {
  const rows = (await relayTableRows(data.dir))[table] ?? [];
  return rows.filter((row) => (JSON.parse(row) as { item_id?: string }).item_id === fileId).length;
}
const hasItem = async () => (await rowsAboutFile('items')) === 1;
const voteCount = () => rowsAboutFile('votes');
const filesOnDisk = () => readdirSync(join(data.dir, 'files')).sort();

describe('a file that could not be fetched now is retried, with its votes', () => {
  it('503 once: the first probe stops before the file event, the second pulls the file and its vote', async () => {
    const peerFile = peerServing((attempt) => (attempt === 1 ? HttpResponse.json({ detail: 'busy' }, { status: 503 }) : bytesResponse()));
    const [first] = await relay.federation.probeAll();
    expect(first).toMatchObject({ reachable: true, pulled: 1, rejected: 0, cursor: 1, error: expect.stringMatching(/event 2 \(item\): file .* answered 503.*next probe retries/) });
    expect(await hasItem()).toBe(false);
    expect(filesOnDisk()).toEqual([]);
    const [second] = await relay.federation.probeAll();
    expect(second).toMatchObject({ reachable: true, pulled: 2, rejected: 0, cursor: 3, error: null });
    expect(peerFile.attempts()).toBe(2);
    expect(await hasItem()).toBe(true);
    expect(await voteCount()).toBe(1);
    expect(filesOnDisk()).toEqual([fileId]);
  });

  it('a network error is transient too', async () => {
    peerServing((attempt) => (attempt === 1 ? HttpResponse.error() : bytesResponse()));
    expect((await relay.federation.probeAll())[0]).toMatchObject({ pulled: 1, cursor: 1, error: expect.stringMatching(/not fetched/) });
    expect((await relay.federation.probeAll())[0]).toMatchObject({ pulled: 2, cursor: 3 });
    expect(await voteCount()).toBe(1);
  });

  it('a download slower than the page timeout but within peerFileTimeoutMs completes; past it, the cursor stays', async () => {
    let release!: () => void;
    let arrived!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    peerServing(async (attempt) => {
      if (attempt === 1) {
        arrived();
        await new Promise<void>((r) => (release = r));
        return bytesResponse();
      }
      arrived();
      await new Promise(() => undefined); // never answers
      return bytesResponse();
    });
    const probing = relay.federation.probeAll();
    await reached;
    fake.tick(5000); // five times the page timeout: a file has its own bound
    release();
    expect((await probing)[0]).toMatchObject({ pulled: 3, cursor: 3, error: null });
    expect(await hasItem()).toBe(true);
  });

  it('a download that outlasts peerFileTimeoutMs leaves the cursor before the file', async () => {
    let arrived!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    peerServing(async () => {
      arrived();
      await new Promise(() => undefined);
      return bytesResponse();
    });
    const probing = relay.federation.probeAll();
    await reached;
    fake.tick(60_000);
    expect((await probing)[0]).toMatchObject({ reachable: true, pulled: 1, cursor: 1, error: expect.stringMatching(/within 60000 ms/) });
    expect(filesOnDisk()).toEqual([]);
  });
});

describe('content that fails verification is skipped and recorded', () => {
  it('wrong bytes: rejected with the reason, the cursor moves on (the vote for the missing item is rejected too)', async () => {
    const peerFile = peerServing(() => new HttpResponse(new TextEncoder().encode('something else')));
    const [result] = await relay.federation.probeAll();
    expect(result).toMatchObject({ pulled: 1, rejected: 2, cursor: 3 });
    expect((await relay.federation.peer(peer))!.rejected_events).toBe(2);
    expect(filesOnDisk()).toEqual([]);
    // Not fetched again: the peer's word was checked and found wrong.
    expect((await relay.federation.probeAll())[0]).toMatchObject({ pulled: 0, rejected: 0, cursor: 3 });
    expect(peerFile.attempts()).toBe(1);
  });

  it('404 is the peer saying it has no such file: rejected, not retried', async () => {
    peerServing(() => HttpResponse.json({ detail: 'no' }, { status: 404 }));
    const [result] = await relay.federation.probeAll();
    expect(result).toMatchObject({ pulled: 1, rejected: 2, cursor: 3 });
    expect(await hasItem()).toBe(false);
  });
});
