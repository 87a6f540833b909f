import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { expectContinue as expectContinueTo } from '../support/expect-continue-request.js';
import { makeElf } from '../support/make-elf.js';
import { rawExchange } from '../fuzz/raw-http.js';

/**
 * With `Expect: 100-continue`, a request the server will refuse from its
 * headers (no token, Content-Length over the limit) is refused before `100 Continue`, so the
 * client never sends the body; a welcome one gets 100, sends its body, and is served.
 */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp({ limits: { maxFirmwareBytes: 1024 } });
});
afterEach(async () => {
  await app.close();
});

/** A raw request with `Expect: 100-continue` to the bench: the body is sent only if the server says 100. */
function expectContinue(pathName: string, headers: Record<string, string>, body: Buffer) {
  return expectContinueTo(new URL(pathName, app.url), headers, body);
}

function multipart(fields: Record<string, string>, file?: Uint8Array): { contentType: string; body: Buffer } {
  const boundary = '----hilbench-continue';
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  if (file) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="firmware"; filename="fw.elf"\r\nContent-Type: application/octet-stream\r\n\r\n`));
    parts.push(Buffer.from(file), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(parts) };
}

const elf = makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(64) }] });

describe('Expect: 100-continue', () => {
  it('refuses an unauthenticated upload with 401 before writing 100', async () => {
    const { contentType, body } = multipart({ board: 'pico' }, elf);
    const out = await expectContinue('/api/v1/jobs/flash', { 'content-type': contentType }, body);
    expect(out.continued).toBe(false);
    expect(out.status).toBe(401);
    expect(out.headers['www-authenticate']).toBe('Bearer');
    expect(out.headers.connection).toBe('close');
    expect(JSON.parse(out.body)).toEqual({ detail: 'Not authenticated: send "authorization: Bearer <token>" (register at POST /api/v1/agents/register)' });
  });

  it('refuses an upload whose Content-Length is over the limit with 413 before writing 100', async () => {
    const { token } = await app.register();
    // 1024 B firmware + 64 KiB of form overhead allowed; this declares more.
    const out = await expectContinue('/api/v1/jobs/flash', { 'content-type': 'multipart/form-data; boundary=x', authorization: `Bearer ${token}` }, Buffer.alloc(1024 + 64 * 1024 + 1));
    expect(out.continued).toBe(false);
    expect(out.status).toBe(413);
    expect(JSON.parse(out.body)).toEqual({ detail: 'the request body is larger than the limit of 66560 bytes (65 KiB)' });
    expect(await app.server.service.store.counts()).toMatchObject({ jobsTotal: 0 });
  });

  it('refuses an oversize registration form with 413 before writing 100 (no token needed there)', async () => {
    const out = await expectContinue('/api/v1/agents/register', { 'content-type': 'application/x-www-form-urlencoded' }, Buffer.alloc(64 * 1024 + 1, 'a'));
    expect(out.continued).toBe(false);
    expect(out.status).toBe(413);
  });

  it('refuses a body that is not a form with the 415 it gets without Expect, whatever its size (it was a 413)', async () => {
    const out = await expectContinue('/api/v1/agents/register', { 'content-type': 'text/plain' }, Buffer.alloc(64 * 1024 + 1, 'a'));
    expect(out).toMatchObject({ continued: false, status: 415 });
    expect(JSON.parse(out.body)).toEqual({ detail: 'Unsupported Media Type: send the body as application/x-www-form-urlencoded or multipart/form-data, not text/plain' });
  });

  it('writes 100 for a welcome upload and serves it', async () => {
    const { token } = await app.register();
    const { contentType, body } = multipart({ board: 'pico' }, elf);
    const out = await expectContinue('/api/v1/jobs/flash', { 'content-type': contentType, authorization: `Bearer ${token}` }, body);
    expect(out.continued).toBe(true);
    expect(out.status).toBe(200);
    expect(JSON.parse(out.body)).toMatchObject({ board: 'pico', state: 'queued' });
    await app.idle();
  });

  it('answers an upload to the trailing-slash variant with its 307 before writing 100 (it was sent whole, then again)', async () => {
    const { token } = await app.register();
    const { contentType, body } = multipart({ board: 'pico' }, elf);
    const out = await expectContinue('/api/v1/jobs/flash/?wait=1', { 'content-type': contentType, authorization: `Bearer ${token}` }, body);
    expect(out).toMatchObject({ continued: false, status: 307, headers: { location: '/api/v1/jobs/flash?wait=1', connection: 'close' } });
    expect(await app.server.service.store.counts()).toMatchObject({ jobsTotal: 0 });
  });

  it('writes 100 for routes without a headers check and lets the app answer', async () => {
    const body = Buffer.from('label=carol');
    const out = await expectContinue('/api/v1/agents/register', { 'content-type': 'application/x-www-form-urlencoded' }, body);
    expect(out).toMatchObject({ continued: true, status: 200 });
    const unknown = await expectContinue('/api/v1/nowhere', { 'content-type': 'application/x-www-form-urlencoded' }, body);
    expect(unknown).toMatchObject({ continued: true, status: 404 });
  });
});

describe('Expect: 100-continue on a GET', () => {
  it('answers at once without 100, and a long answer arrives whole (it was cut at 64 KiB when the unread body reset the connection)', async () => {
    // Enough traffic that /metrics passes 64 KiB: one series per route, method and status.
    const paths = ['/api/v1/boards', '/api/v1/health', '/stats', '/api/v1/jobs/x', '/api/v1/sessions/x', '/admin/workers', '/llms.txt', '/openapi.json', '/api/v1/jobs/flash', '/api/v1/sessions', '/api/v1/agents/register', '/api/v1/waitlist', '/console', '/api/v1/worker/claim'];
    for (let round = 0; round < 30; round++) {
      await (await fetch(new URL(`/api/v1/boards/b${round}/queue`, app.url))).arrayBuffer();
      for (const p of paths) for (const method of ['GET', 'POST', 'DELETE', 'PUT']) await (await fetch(new URL(p, app.url), { method })).arrayBuffer();
    }
    const exchange = await rawExchange(app.url, {
      method: 'GET',
      path: '/metrics',
      headers: { 'Content-Type': 'application/json', 'Content-Length': 2, Expect: '100-continue' },
      body: Buffer.from('{}'),
      ending: 'expect-continue',
    });
    expect(exchange.responses.map((r) => r.status)).toEqual([200]);
    const answer = exchange.responses[0]!;
    expect(answer.body.length).toBe(Number(answer.headers['content-length']));
    expect(answer.body.length).toBeGreaterThan(64 * 1024);
    expect(exchange.leftover.length).toBe(0);
    // 1 710 sequential requests build the long /metrics: a few seconds on a quiet machine, more than
    // the default 30 s when the 2 cores are shared with a dozen other processes.
  }, 120_000);
});
