import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import type { FileSyncs } from '../../lifecycle/durable-files.js';
import { FileStore } from './file-store.js';
import { settledSoon } from '../../../test/support/settled-soon.js';
import { systemClock } from '../../../core/clock.js';
import { waitUntil } from '../../../core/wait.js';

/**
 * A stored file is durable before anyone hears of it (decision 0480): its bytes are synced before
 * it is renamed into place, and the rename is synced through the directory before the store says
 * it is stored (its item is committed after that).
 */
const content = Buffer.from('firmware image bytes');
const id = createHash('sha256').update(content).digest('hex');

/** Records each sync with whether the file is in place at that moment; `dir` waits for `releaseDir` (`dirCalled` settles when it is reached). */
function recordingSyncs(target: () => string) {
  const calls: string[] = [];
  let releaseDir = () => {};
  const dirGate = new Promise<void>((resolve) => (releaseDir = resolve));
  let dirReached = () => {};
  const dirCalled = new Promise<void>((resolve) => (dirReached = resolve));
  const syncs: FileSyncs = {
    file: async (path) => {
      calls.push(`file ${basename(path).startsWith('tmp-') ? 'tmp-*' : basename(path)}, in place: ${existsSync(target())}`);
    },
    dir: async (path) => {
      calls.push(`dir ${basename(path)}, in place: ${existsSync(target())}`);
      dirReached();
      await dirGate;
    },
  };
  return { calls, syncs, dirCalled, releaseDir: () => releaseDir() };
}

/** A multipart request as the HTTP server hands it over: a stream with headers. */
async function multipartRequest(): Promise<IncomingMessage> {
  const form = new FormData();
  form.append('file', new Blob([content]), 'image.elf');
  const encoded = new globalThis.Request('http://relay.test/items', { method: 'POST', body: form });
  const body = Buffer.from(await encoded.arrayBuffer());
  const req = new PassThrough();
  req.end(body);
  return Object.assign(req, { headers: { 'content-type': encoded.headers.get('content-type') ?? '', 'content-length': String(body.length) }, complete: true }) as unknown as IncomingMessage;
}

/** The content as a peer's response body streams it. */
async function* chunks(): AsyncIterable<Uint8Array> {
  yield content;
}

let data: ReturnType<typeof tempDataDir>;
beforeEach(() => {
  data = tempDataDir('file-store-');
});
afterEach(() => data.remove());

describe('FileStore: a stored file is on disk before it is reported stored', () => {
  it('an upload: bytes synced before the rename, the rename synced before the upload settles', async () => {
    const recorder = recordingSyncs(() => join(data.dir, 'files', id));
    const files = new FileStore(data.dir, undefined, recorder.syncs);
    const received = files.receiveMultipart(await multipartRequest());
    await recorder.dirCalled;
    expect(await settledSoon(received)).toBe(false);
    expect(recorder.calls).toEqual(['file tmp-*, in place: false', 'dir files, in place: true']);
    recorder.releaseDir();
    await expect(received).resolves.toMatchObject({ itemId: id, bytes: content.length });
  });

  it('a file from a peer: the same order', async () => {
    const recorder = recordingSyncs(() => join(data.dir, 'files', id));
    const files = new FileStore(data.dir, undefined, recorder.syncs);
    const received = files.receiveVerified(chunks(), id);
    await recorder.dirCalled;
    expect(await settledSoon(received)).toBe(false);
    expect(recorder.calls).toEqual(['file tmp-*, in place: false', 'dir files, in place: true']);
    recorder.releaseDir();
    await expect(received).resolves.toEqual({ ok: true, bytes: content.length });
  });

  it('the same content arriving while the first copy\'s rename is being synced does not settle before that sync', async () => {
    const recorder = recordingSyncs(() => join(data.dir, 'files', id));
    const files = new FileStore(data.dir, undefined, recorder.syncs);
    const first = files.receiveVerified(chunks(), id);
    await recorder.dirCalled;
    // The name is in the directory but not yet durable: a second copy must not count it as stored.
    const second = files.receiveVerified(chunks(), id);
    // The second copy is written and its bytes synced: waited for with a bound in time, not in
    // event-loop turns (file writes go through the thread pool; on a loaded machine they took
    // more than the 1000 turns the test allowed).
    const fileSyncs = () => recorder.calls.filter((c) => c.startsWith('file'));
    await waitUntil(systemClock, () => (fileSyncs().length >= 2 ? true : undefined), {
      timeoutMs: 10_000,
      describe: 'the second copy reaching its file sync',
      lastSeen: () => recorder.calls.join('; '),
    });
    expect(fileSyncs()).toHaveLength(2);
    expect(await settledSoon(second)).toBe(false);
    recorder.releaseDir();
    await expect(first).resolves.toEqual({ ok: true, bytes: content.length });
    await expect(second).resolves.toEqual({ ok: true, bytes: content.length });
  });

  it('syncs for real by default', async () => {
    const files = new FileStore(data.dir);
    await expect(files.receiveVerified(chunks(), id)).resolves.toEqual({ ok: true, bytes: content.length });
    expect(existsSync(files.pathOf(id))).toBe(true);
  });
});

describe('FileStore: form text is UTF-8', () => {
  /** A raw multipart request with a file part and a `title` part with `titleHeaders`. */
  function rawUpload(contentType: string, titleHeaders: string, title: Buffer): IncomingMessage {
    const body = Buffer.concat([
      Buffer.from(`--B\r\nContent-Disposition: form-data; name="title"\r\n${titleHeaders}\r\n`),
      title,
      Buffer.from('\r\n--B\r\nContent-Disposition: form-data; name="file"; filename="image.elf"\r\n\r\n'),
      content,
      Buffer.from('\r\n--B--\r\n'),
    ]);
    const req = new PassThrough();
    req.end(body);
    return Object.assign(req, { headers: { 'content-type': contentType, 'content-length': String(body.length) }, complete: true }) as unknown as IncomingMessage;
  }

  it('a title part in a charset busboy cannot decode is refused, not replaced by the file name', async () => {
    const files = new FileStore(data.dir);
    const upload = files.receiveMultipart(rawUpload('multipart/form-data; boundary=B', 'Content-Type: text/plain; charset=utf-16\r\n', Buffer.from('My title', 'utf16le')));
    await expect(upload).rejects.toMatchObject({ code: 'invalid_input', detail: 'validation failed: body.title: Value error, not a usable multipart request: the part declares a charset the relay cannot read; send form text as UTF-8' });
    expect(existsSync(files.pathOf(id))).toBe(false);
  });

  it('a form declaring a charset other than UTF-8, US-ASCII or ISO-8859-1 is refused from its headers', async () => {
    const files = new FileStore(data.dir);
    const upload = files.receiveMultipart(rawUpload('multipart/form-data; boundary=B; charset=utf-16', '', Buffer.from('My title')));
    await expect(upload).rejects.toMatchObject({
      code: 'invalid_input',
      detail: 'validation failed: header.content-type: Value error, not a usable multipart request: form text must be UTF-8, US-ASCII or ISO-8859-1, not charset "utf-16"',
    });
    expect(existsSync(files.pathOf(id))).toBe(false);
  });

  it('a form declaring US-ASCII is read as UTF-8, one declaring ISO-8859-1 as that (its parts declaring none too)', async () => {
    const files = new FileStore(data.dir);
    await expect(files.receiveMultipart(rawUpload('multipart/form-data; boundary=B; charset=us-ascii', '', Buffer.from('Title')))).resolves.toMatchObject({ itemId: id, title: 'Title' });
    await expect(files.receiveMultipart(rawUpload('multipart/form-data; boundary=B; charset=ISO-8859-1', '', Buffer.from('T\xefTle', 'latin1')))).resolves.toMatchObject({ itemId: id, title: 'TïTle' });
  });

  it('UTF-8, declared or not, is read', async () => {
    const files = new FileStore(data.dir);
    await expect(files.receiveMultipart(rawUpload('multipart/form-data; boundary=B; charset=UTF-8', '', Buffer.from('Tïtle')))).resolves.toMatchObject({ itemId: id, title: 'Tïtle' });
  });
});

