import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers, foregroundClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { call, relayForTests, relayLimits } from '../support/relay-test-kit.js';

/** The relay's file items over HTTP: uploads, their bounds and refusals, and serving the bytes back. */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const { relay, alice, dataDir } = relayForTests({ clock, nodes: ['alice'] });

describe('file items', () => {
  const upload = (bytes: Uint8Array, title?: string) => {
    const form = new FormData();
    if (title !== undefined) form.append('title', title);
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'firmware.bin');
    return call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
  };
  const tempFiles = () => readdirSync(join(dataDir, 'files')).filter((f) => f.startsWith('tmp-'));
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
    expect(readdirSync(join(dataDir, 'files'))).not.toContain(overId);
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
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: alice.auth, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } });
      req.on('error', () => undefined);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\n\r\n`);
      // Aborted once the relay is writing the upload to its temp file (a bounded look at the
      // directory, not a guessed delay): mid-upload for certain.
      req.write(Buffer.alloc(256 * 1024, 5), () => {
        void waitUntil(foregroundClock, () => (tempFiles().length > 0 ? true : undefined), { timeoutMs: 10_000, describe: 'the upload to reach its temp file' }).then(
          () => {
            req.destroy();
            resolve();
          },
          reject,
        );
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

