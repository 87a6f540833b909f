import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, foregroundClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { claimId } from '../../core/relay/claim.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { quorumSetHash } from '../../core/relay/quorum-set.js';
import { signVote } from '../../core/relay/vote.js';
import { call, nowSeconds, postClaim, registerNode, relayLimits, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const data = tempDataDir();
let relay: RunningRelay;
let alice: TestNode;
let seq = 0;
const uniqueTitle = () => `claim ${seq++}`;

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
  alice = await registerNode(relay, clock, { name: 'alice' });
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

const post = (path: string, body: unknown, auth = alice.auth) => call(relay.baseUrl, 'POST', path, { body, auth });

describe('claims', () => {
  it('the id is sha256("x.claim/1\\n" + kind + "\\n" + title + "\\n" + body); posting again is idempotent', async () => {
    const claim = { kind: 'measurement', title: 'UART at 115200', body: 'three runs' };
    const expected = createHash('sha256').update(`x.claim/1\n${claim.kind}\n${claim.title}\n${claim.body}`).digest('hex');
    const first = await post('/items', claim);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ id: expected, type: 'claim', author: alice.nodeId, created: true });
    const again = await post('/items', claim);
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
    const got = await call(relay.baseUrl, 'GET', `/items/${expected}`);
    expect(got.body).toMatchObject({ id: expected, title: claim.title, body: claim.body });
  });

  it('title: 200 code points pass, 201 are refused (astral characters count once)', async () => {
    const astral = '😀'.repeat(relayLimits.titleMaxChars);
    const ok = await post('/items', { kind: 'statement', title: astral, body: '' });
    expect(ok.status).toBe(201);
    expect(ok.body.id).toBe(claimId({ kind: 'statement', title: astral, body: '' }));
    const tooLong = await post('/items', { kind: 'statement', title: 'a'.repeat(relayLimits.titleMaxChars + 1), body: '' });
    expect(tooLong.status).toBe(422);
    expect((tooLong.body.detail as unknown[])[0]).toMatchObject({ type: 'string_too_long', loc: ['body', 'title'], ctx: { max_length: 200 } });
  });

  it('body: 32000 code points pass, 32001 are refused', async () => {
    expect((await post('/items', { kind: 'statement', title: uniqueTitle(), body: 'b'.repeat(relayLimits.bodyMaxChars) })).status).toBe(201);
    const r = await post('/items', { kind: 'statement', title: uniqueTitle(), body: 'b'.repeat(relayLimits.bodyMaxChars + 1) });
    expect(r.status).toBe(422);
    expect((r.body.detail as unknown[])[0]).toMatchObject({ type: 'string_too_long', loc: ['body', 'body'] });
  });

  it('kind and title may not contain a line break; kind must be known; nothing is stored', async () => {
    const before = (await call(relay.baseUrl, 'GET', '/network')).body.counts as { items: number };
    for (const claim of [
      { kind: 'statement', title: 'two\nlines', body: '' },
      { kind: 'state\nment', title: 't', body: '' },
      { kind: 'gossip', title: 't', body: '' },
    ]) {
      const r = await post('/items', claim);
      expect(r.status, JSON.stringify(claim)).toBe(422);
    }
    const after = (await call(relay.baseUrl, 'GET', '/network')).body.counts as { items: number };
    expect(after.items).toBe(before.items);
  });

  it('a bot can post for its node', async () => {
    const bot = await post('/bots', { name: 'poster' });
    const r = await post('/items', { kind: 'observation', title: uniqueTitle(), body: '' }, String(bot.body.authorization));
    expect(r.status).toBe(201);
    expect(r.body.author).toBe(alice.nodeId);
  });

  it('lists items newest first with a cursor', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await postClaim(relay, alice.auth, { kind: 'statement', title: uniqueTitle(), body: '' }));
    const page = await call(relay.baseUrl, 'GET', '/items?limit=2');
    expect((page.body.items as { id: string }[]).map((i) => i.id)).toEqual([ids[2], ids[1]]);
    const next = await call(relay.baseUrl, 'GET', `/items?limit=2&after=${String(page.body.next)}`);
    expect((next.body.items as { id: string }[])[0]!.id).toBe(ids[0]);
  });
});

describe('file items', () => {
  const upload = (bytes: Uint8Array, title?: string) => {
    const form = new FormData();
    if (title !== undefined) form.append('title', title);
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'firmware.bin');
    return call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
  };
  const tempFiles = () => readdirSync(join(data.dir, 'files')).filter((f) => f.startsWith('tmp-'));
  /** Waits (bounded, in real time: the file store's streams close on I/O, not on a clock) until no upload temp file is left. */
  const noTempFilesLeft = () =>
    waitUntil(foregroundClock, () => (tempFiles().length === 0 ? true : undefined), { timeoutMs: 10_000, describe: 'upload temp files to be removed', lastSeen: () => tempFiles().join(', ') });

  it('stores a file under its sha256 and serves its bytes back', async () => {
    const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) % 256);
    const r = await upload(bytes, 'blinky image');
    expect(r.status).toBe(201);
    const id = createHash('sha256').update(bytes).digest('hex');
    expect(r.body).toMatchObject({ id, type: 'file', bytes: bytes.length, title: 'blinky image' });
    const back = await fetch(`${relay.baseUrl}/items/${id}`, { headers: { accept: 'application/octet-stream' } });
    expect(Buffer.from(await back.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    expect((await call(relay.baseUrl, 'GET', `/items/${id}`)).body).toMatchObject({ id, bytes: bytes.length });
  });

  it('accepts exactly 16777216 bytes and refuses 16777217 with 413, leaving no file behind', async () => {
    const max = new Uint8Array(relayLimits.fileMaxBytes).fill(1);
    const ok = await upload(max);
    expect(ok.status).toBe(201);
    expect(ok.body.bytes).toBe(relayLimits.fileMaxBytes);
    const over = new Uint8Array(relayLimits.fileMaxBytes + 1).fill(2);
    const r = await upload(over);
    expect(r.status).toBe(413);
    expect(String(r.body.detail)).toMatch(/16777216/);
    const overId = createHash('sha256').update(over).digest('hex');
    expect((await call(relay.baseUrl, 'GET', `/items/${overId}`)).status).toBe(404);
    expect(readdirSync(join(data.dir, 'files'))).not.toContain(overId);
    // The temp file of the refused upload is removed once its stream closes.
    await noTempFilesLeft();
  });

  it('answers 413 while an oversize upload is still streaming (it is never buffered whole)', async () => {
    const { request } = await import('node:http');
    const boundary = 'relayboundary';
    const url = new URL(`${relay.baseUrl}/items`);
    const chunk = Buffer.alloc(1024 * 1024, 3);
    // 17 MiB of file content, chunked (no Content-Length to refuse on), and the request is never
    // ended: a server that waited for the whole body before answering would never answer.
    const chunks = 17;
    const status = await new Promise<number>((resolve, reject) => {
      let answered = false;
      const req = request(
        { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: alice.auth, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } },
        (res) => {
          answered = true;
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', (err) => (answered ? undefined : reject(err)));
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      let sent = 0;
      const pump = () => {
        while (!answered && sent < chunks) {
          sent++;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    expect(status).toBe(413);
    // And the partial temp file is gone.
    await noTempFilesLeft();
  });

  it('a client that aborts mid-upload leaves no temp file behind', async () => {
    const { request } = await import('node:http');
    const url = new URL(`${relay.baseUrl}/items`);
    const boundary = 'abortboundary';
    await new Promise<void>((resolve) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: alice.auth, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } });
      req.on('error', () => undefined);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\n\r\n`);
      req.write(Buffer.alloc(256 * 1024, 5), () => {
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 50);
      });
    });
    await noTempFilesLeft();
  });

  it('refuses a far larger upload on its Content-Length before reading a byte of it', async () => {
    const { request } = await import('node:http');
    const url = new URL(`${relay.baseUrl}/items`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { authorization: alice.auth, 'content-type': 'multipart/form-data; boundary=zzz', 'content-length': String(4 * relayLimits.fileMaxBytes) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', reject);
      req.flushHeaders(); // headers only: the body is never sent
    });
    expect(status).toBe(413);
  });

  it('a malformed multipart body is a 400, in the bench\'s (Starlette\'s) words', async () => {
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: 'x', auth: alice.auth, headers: { 'content-type': 'multipart/form-data; boundary=zzz' } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ detail: 'There was an error parsing the body: Unexpected end of form' });
  });

  it('a body that is neither JSON nor multipart is a 415', async () => {
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: 'kind=statement', auth: alice.auth, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(r.status).toBe(415);
  });

  it('serves a file as a sandboxed attachment under the media type it came with', async () => {
    const form = new FormData();
    form.append('file', new Blob(['<script>alert(1)</script>'], { type: 'text/html' }), 'page.html');
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
    expect([r.status, r.body.media_type]).toEqual([201, 'text/html']);
    const back = await fetch(`${relay.baseUrl}/items/${String(r.body.id)}`, { headers: { accept: 'application/octet-stream' } });
    expect(back.headers.get('content-type')).toMatch(/^text\/html/);
    expect(back.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(back.headers.get('content-disposition')).toBe(`attachment; filename="${String(r.body.id)}"`);
  });

  it('a file part without a Content-Type is text/plain (RFC 7578), and one over 200 characters is a 422 storing nothing', async () => {
    const boundary = 'mediatypeboundary';
    const part = (headers: string, bytes: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n${headers}\r\n${bytes}\r\n--${boundary}--\r\n`;
    const send = (body: string) => call(relay.baseUrl, 'POST', '/items', { rawBody: body, auth: alice.auth, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
    const bare = await send(part('', 'no content type here'));
    expect([bare.status, bare.body.media_type]).toEqual([201, 'text/plain']);
    const longBytes = 'long media type';
    const long = await send(part(`Content-Type: application/${'x'.repeat(300)}\r\n`, longBytes));
    expect(long.status).toBe(422);
    expect((long.body.detail as unknown[])[0]).toMatchObject({ loc: ['body', 'file'], type: 'value_error', ctx: { max_length: 200 } });
    const id = createHash('sha256').update(longBytes).digest('hex');
    expect((await call(relay.baseUrl, 'GET', `/items/${id}`)).status).toBe(404);
    await noTempFilesLeft();
  });

  it('a multipart body without a file part is a 422', async () => {
    const form = new FormData();
    form.append('title', 'no file');
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
    expect(r.status).toBe(422);
    expect((r.body.detail as unknown[])[0]).toMatchObject({ type: 'missing', loc: ['body', 'file'] });
  });
});

describe('votes and bulletins', () => {
  const slice = () => ({ t: 1, v: [relay.service.nodeId], i: [] });

  it('stores a signed vote; a duplicate is idempotent; a changed hint still verifies', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const vote = voteBy(alice, id, 'yes', 'vote', slice(), clock);
    const first = await post(`/items/${id}/vote`, vote);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ stored: true, duplicate: false, equivocation: false });
    const again = await post(`/items/${id}/vote`, { ...vote, hint: 'relayed by someone' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ stored: false, duplicate: true });
    const bulletin = await call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${alice.nodeId}`);
    expect(bulletin.body).toMatchObject({ state: 'voted', value: 'yes', counts: { yes: { vote: 1 } }, slice_hash: quorumSetHash(slice()) });
  });

  it('refuses a tampered vote, a vote for another item, and an unregistered voter', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const other = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const vote = voteBy(alice, id, 'yes', 'vote', slice(), clock);
    const tampered = await post(`/items/${id}/vote`, { ...vote, value: 'no' });
    expect(tampered.status).toBe(422);
    expect((tampered.body.detail as unknown[])[0]).toMatchObject({ loc: ['body', 'sig'] });
    expect((await post(`/items/${other}/vote`, vote)).status).toBe(422);
    const stranger = generateNodeKey();
    const unregistered = await post(`/items/${id}/vote`, voteBy(stranger, id, 'yes', 'vote', slice(), clock));
    expect(unregistered.status).toBe(403);
    expect((await post(`/items/${'9'.repeat(64)}/vote`, vote)).status).toBe(404);
    const bulletin = await call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${alice.nodeId}`);
    expect(bulletin.body).toMatchObject({ state: 'uncommitted' });
  });

  it('keeps both statements of an equivocator as evidence and lists it', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const bob = await registerNode(relay, clock);
    await post(`/items/${id}/vote`, voteBy(bob, id, 'yes', 'vote', slice(), clock));
    const second = await post(`/items/${id}/vote`, voteBy(bob, id, 'no', 'vote', slice(), clock));
    expect(second.status).toBe(201);
    expect(second.body.equivocation).toBe(true);
    const bulletin = await call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${relay.service.nodeId}`);
    expect(bulletin.body.equivocators).toEqual([bob.nodeId]);
    expect(bulletin.body.counts).toMatchObject({ yes: { vote: 1 }, no: { vote: 1 } });
  });

  it('the relay node accepts and confirms as its slice does, signing its own statements', async () => {
    // A dedicated relay whose node trusts exactly two humans (2 of 2).
    const dir = tempDataDir();
    const h1 = generateNodeKey();
    const h2 = generateNodeKey();
    const own = await (await import('../support/relay-test-kit.js')).startRelayServer({ clock, dataDir: dir.dir, logger: memoryLogger(), selfSlice: { t: 2, v: [h1.nodeId, h2.nodeId].sort(), i: [] } });
    try {
      const n1 = await registerNode(own, clock, { key: h1 });
      const n2 = await registerNode(own, clock, { key: h2 });
      const id = await postClaim(own, n1.auth, { kind: 'statement', title: 'LED blinks at 1 Hz', body: '' });
      const humansSlice = (other: string) => ({ t: 1, v: [other], i: [] });
      for (const [n, other] of [[n1, n2], [n2, n1]] as const) {
        await call(own.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(n, id, 'yes', 'vote', humansSlice(other.nodeId), clock) });
      }
      // Each human's bulletin tells its client to accept; the relay has not moved yet.
      const b1 = await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${n1.nodeId}`);
      expect(b1.body).toMatchObject({ state: 'accepted', accepted_via: 'quorum', to_emit: [{ value: 'yes', phase: 'accept' }] });
      expect((await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${own.service.nodeId}`)).body.state).toBe('uncommitted');
      // With t = 2 of 2, one accepting human is a v-blocking set: the relay accepts...
      const first = await call(own.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(n1, id, 'yes', 'accept', humansSlice(n2.nodeId), clock) });
      expect(first.body.relay_emitted).toEqual([{ value: 'yes', phase: 'accept' }]);
      expect((await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${own.service.nodeId}`)).body.state).toBe('accepted');
      // ...and confirms once its whole slice accepted (a quorum of accepters including itself).
      const last = await call(own.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(n2, id, 'yes', 'accept', humansSlice(n1.nodeId), clock) });
      expect(last.body.relay_emitted).toEqual([{ value: 'yes', phase: 'confirm' }]);
      const relayBulletin = await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${own.service.nodeId}`);
      expect(relayBulletin.body).toMatchObject({ state: 'confirmed', value: 'yes' });
      expect(relayBulletin.body.accepted_via).not.toBeNull();
      // Its statements are stored, signed, and in the feed like anyone's.
      const events = await call(own.baseUrl, 'GET', `/events?authors=${own.service.nodeId}`);
      const votes = (events.body.events as { kind: string; data: { vote: { phase: string; sig: string } } }[]).filter((e) => e.kind === 'vote');
      expect(votes.map((e) => e.data.vote.phase)).toEqual(['accept', 'confirm']);
    } finally {
      await own.close();
      dir.remove();
    }
  });

  it('slice_hash votes resolve through a published slice', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const published = await post('/slice', { v: [relay.service.nodeId] });
    const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: id, voter: alice.nodeId, value: 'no', phase: 'vote', slice_hash: String(published.body.slice_hash), created_at: nowSeconds(clock) }, alice.secretKey);
    expect((await post(`/items/${id}/vote`, vote)).status).toBe(201);
    const unknownHash = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: id, voter: alice.nodeId, value: 'no', phase: 'accept', slice_hash: 'ab'.repeat(32), created_at: nowSeconds(clock) }, alice.secretKey);
    const r = await post(`/items/${id}/vote`, unknownHash);
    expect(r.status).toBe(422);
    expect((r.body.detail as unknown[])[0]).toMatchObject({ loc: ['body', 'slice_hash'] });
  });
});

describe('slices', () => {
  it('defaults t to 67 %, includes and excludes, and refuses what breaks the sanity rules', async () => {
    const node = await registerNode(relay, clock);
    const ids = Array.from({ length: 3 }, () => generateNodeKey().nodeId);
    const set = await post('/slice', { v: ids }, node.auth);
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ t_auto: true, slice: { t: 3 } });
    const inc = await post('/slice/include', { node_id: alice.nodeId }, node.auth);
    expect((inc.body.slice as { v: string[]; t: number }).v).toContain(alice.nodeId);
    expect((inc.body.slice as { t: number }).t).toBe(3);
    const exc = await post('/slice/exclude', { node_id: ids[0] }, node.auth);
    expect((exc.body.slice as { v: string[] }).v).not.toContain(ids[0]);
    for (const bad of [{ t: 5, v: ids }, { t: 0, v: ids }, { v: [ids[0], ids[0]] }, { v: [node.nodeId] }, { v: [] }, { v: ['xyz'] }]) {
      const r = await post('/slice', bad, node.auth);
      expect(r.status, JSON.stringify(bad)).toBe(422);
    }
    const deep = { t: 1, v: [], i: [{ t: 1, v: [], i: [{ t: 1, v: [], i: [{ t: 1, v: [], i: [{ t: 1, v: [ids[1]], i: [] }] }] }] }] };
    expect((await post('/slice', deep, node.auth)).status).toBe(422);
    // None of the refused changes touched the stored slice.
    const now = await call(relay.baseUrl, 'GET', `/nodes/${node.nodeId}`);
    expect((now.body.slice as { hash: string }).hash).toBe(exc.body.slice_hash);
  });

  it('refuses to exclude the last validator or an explicit t above the entries', async () => {
    const node = await registerNode(relay, clock);
    const [a, b] = [generateNodeKey().nodeId, generateNodeKey().nodeId];
    await post('/slice', { t: 2, v: [a, b] }, node.auth);
    expect((await post('/slice/exclude', { node_id: a }, node.auth)).status).toBe(422);
    await post('/slice', { v: [a] }, node.auth);
    expect((await post('/slice/exclude', { node_id: a }, node.auth)).status).toBe(422);
    expect((await post('/slice/exclude', { node_id: b }, node.auth)).status).toBe(422);
  });
});

describe('reports', () => {
  it('files one report per node per item and lists the caller\'s reports', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'statement', title: uniqueTitle(), body: '' });
    const reporter = await registerNode(relay, clock);
    expect((await post(`/items/${id}/report`, { reason: 'spam', note: 'ad' }, reporter.auth)).status).toBe(201);
    expect((await post(`/items/${id}/report`, { reason: 'misleading' }, reporter.auth)).status).toBe(201);
    expect((await post(`/items/${id}/report`, { reason: 'because' }, reporter.auth)).status).toBe(422);
    expect((await post(`/items/${'7'.repeat(64)}/report`, { reason: 'spam' }, reporter.auth)).status).toBe(404);
    const mine = await call(relay.baseUrl, 'GET', '/report', { auth: reporter.auth });
    expect(mine.body.reports).toEqual([expect.objectContaining({ item: id, reason: 'misleading' })]);
    expect((await call(relay.baseUrl, 'GET', `/items/${id}`)).body.reports).toBe(1);
    expect(((await call(relay.baseUrl, 'GET', '/report', { auth: alice.auth })).body.reports as unknown[]).some((r) => (r as { item: string }).item === id)).toBe(false);
  });
});
