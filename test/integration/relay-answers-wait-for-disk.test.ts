import { createClock } from '@sinonjs/fake-timers';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, type RunningRelay, startRelayServer, tempDataDir, voteBy } from '../support/relay-test-kit.js';
import { settledSoon } from '../support/settled-soon.js';

/**
 * Decision 0480: the relay's commits are synced off the event loop, and no answer, success or
 * read, goes out before what it depends on is on disk. The WAL sync is gated here by hand: while
 * it is held, a committed vote is in the database but nobody has heard of it.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));

/** A sync that passes at once until `hold()`, then waits for `release()` or `fail()`. */
function syncGate() {
  let held = false;
  const waiting: { resolve: () => void; reject: (error: Error) => void }[] = [];
  let onStart: (() => void) | undefined;
  return {
    syncFile: () =>
      new Promise<void>((resolve, reject) => {
        if (!held) return resolve();
        waiting.push({ resolve, reject });
        onStart?.();
      }),
    hold: () => (held = true),
    /** Settles when a held sync has begun. */
    started: () => new Promise<void>((resolve) => (waiting.length > 0 ? resolve() : (onStart = resolve))),
    release: () => {
      held = false;
      for (const w of waiting.splice(0)) w.resolve();
    },
    fail: (error: Error) => {
      for (const w of waiting.splice(0)) w.reject(error);
    },
  };
}

let relay: RunningRelay | undefined;
const data = tempDataDir('relay-disk-');
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

/**
 * A relay whose WAL sync is held while a file item is uploaded: resolves once the upload's item is
 * committed and its sync has begun (the upload's answer still held).
 */
async function heldUpload(text: string) {
  const gate = syncGate();
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), syncFile: gate.syncFile });
  const uploader = await registerNode(relay, clock);
  const bytes = new TextEncoder().encode(text);
  const fileId = createHash('sha256').update(bytes).digest('hex');
  gate.hold();
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'fw.bin');
  const upload = fetch(`${relay.baseUrl}/items`, { method: 'POST', headers: { authorization: uploader.auth }, body: form });
  await gate.started();
  return { gate, relay, bytes, fileId, upload };
}

describe('relay answers wait until their commit is on disk (decision 0480)', () => {
  it('holds a vote\'s answer, and a read of what it committed, until the WAL sync ends', async () => {
    const gate = syncGate();
    relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), syncFile: gate.syncFile });
    const voter = await registerNode(relay, clock);
    const item = await postClaim(relay, voter, { kind: 'statement', title: 'on disk first', body: '' });

    gate.hold();
    const answer = call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(voter, item, 'yes', 'vote', { t: 1, v: [relay.service.nodeId], i: [] }, clock) });
    await gate.started();
    // Committed (another connection sees it) ...
    const peek = new Database(join(data.dir, 'relay.sqlite'), { readonly: true });
    try {
      expect(peek.prepare('SELECT count(*) AS n FROM votes WHERE item_id = ? AND voter = ?').get(item, voter.nodeId)).toEqual({ n: 1 });
    } finally {
      peek.close();
    }
    // ... but neither its answer nor a read that would show it has gone out.
    const events = call<{ events: { kind: string }[] }>(relay.baseUrl, 'GET', '/events?limit=500');
    expect(await settledSoon(answer)).toBe(false);
    expect(await settledSoon(events)).toBe(false);

    gate.release();
    expect((await answer).status).toBe(201);
    const read = await events;
    expect(read.status).toBe(200);
    expect(read.body.events.some((e) => e.kind === 'vote')).toBe(true);
  });

  it('holds a streamed file download, head and bytes, until the commit of its item is on disk', async () => {
    const { gate, relay, bytes, fileId, upload } = await heldUpload('firmware that must not be seen before it is stored');
    // The item is committed; its bytes are streamed with a Content-Length, so a head sent now
    // would hand the client the whole answer before the commit is durable.
    const download = fetch(`${relay.baseUrl}/items/${fileId}`, { headers: { accept: 'application/octet-stream' } });
    expect(await settledSoon(download)).toBe(false);
    expect(await settledSoon(upload)).toBe(false);

    gate.release();
    expect((await upload).status).toBe(201);
    const got = await download;
    expect(got.status).toBe(200);
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(bytes);
  });

  it('refuses a held file download with a 503 (no head, no bytes) when the sync fails', async () => {
    const { gate, relay, fileId, upload } = await heldUpload('bytes of an item whose commit fails to sync');
    const download = call(relay.baseUrl, 'GET', `/items/${fileId}`, { headers: { accept: 'application/octet-stream' } });
    expect(await settledSoon(download)).toBe(false);
    gate.fail(new Error('EIO: i/o error, fdatasync'));
    expect((await upload).status).toBe(503);
    const refused = await download;
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(refused.headers.get('content-disposition')).toBeNull();
    expect(refused.body).toEqual({ detail: expect.stringMatching(/could not be synced to disk/) });
  });

  it('answers 503 with the reason once a sync failed, and keeps refusing until restarted', async () => {
    const gate = syncGate();
    const logger = memoryLogger();
    relay = await startRelayServer({ clock, dataDir: data.dir, logger, syncFile: gate.syncFile });
    const voter = await registerNode(relay, clock, { key: generateNodeKey() });
    const item = await postClaim(relay, voter, { kind: 'statement', title: 'the disk fails', body: '' });

    gate.hold();
    const answer = call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(voter, item, 'yes', 'vote', { t: 1, v: [relay.service.nodeId], i: [] }, clock) });
    await gate.started();
    gate.fail(new Error('EIO: i/o error, fdatasync'));
    const refused = await answer;
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/could not be synced to disk \(EIO: i\/o error, fdatasync\); restart the relay/);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    // Nothing new committed, still refused: after a failed fdatasync the kernel may have dropped pages.
    expect((await call(relay.baseUrl, 'GET', '/health')).status).toBe(503);
    // A write refused with a 503 stores nothing: the disk may still take what it committed, and
    // the client, told 503, would not expect it after the restart.
    const claim = { kind: 'statement', title: 'after the disk failed', body: '' };
    const late = await call(relay.baseUrl, 'POST', '/items', { body: claim, auth: voter.auth });
    expect(late.status).toBe(503);
    const peek = new Database(join(data.dir, 'relay.sqlite'), { readonly: true });
    try {
      expect(peek.prepare('SELECT count(*) AS n FROM items WHERE title = ?').get(claim.title)).toEqual({ n: 0 });
    } finally {
      peek.close();
    }
    expect(logger.lines.filter((line) => /could not be synced/.test(line))).toHaveLength(1);
  });
});
