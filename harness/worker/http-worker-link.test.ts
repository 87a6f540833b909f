import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { HttpWorkerLink, WorkerServerError } from './http-worker-link.js';
import type { JobTicket, WorkerJobOutcome } from './worker-link.js';

/**
 * The worker's HTTP link (issue 10) against a scripted server on loopback: firmware is fetched by
 * sha256 once and then read from the local cache, and an outcome the server cannot take is
 * retried on the worker's clock, bounded by `deliverForMs`, while a refusal is not retried.
 */

const firmware = new Uint8Array([1, 2, 3, 4, 5]);
const sha256 = createHash('sha256').update(firmware).digest('hex');
const ticket: JobTicket = { kind: 'job', jobId: 'job_1', board: 'pico', firmwareSha256: sha256, uartSeconds: 1, maxUartBytes: 1024 };
const outcome: WorkerJobOutcome = { state: 'failed', failure: { kind: 'internal', message: 'x' }, uart: null };

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A server answering each request with `answer(path)`; it counts requests by path. */
async function scripted(answer: (url: string) => { status: number; body: Uint8Array | string; type: string }) {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    req.resume();
    req.on('end', () => {
      const a = answer(req.url!);
      res.writeHead(a.status, { 'content-type': a.type }).end(a.body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

function link(serverUrl: string, options: { deliverForMs?: number } = {}) {
  const fake = createClock(0);
  const cacheDir = mkdtempSync(path.join(tmpdir(), 'hilbench-link-cache-'));
  dirs.push(cacheDir);
  const errors: string[] = [];
  const http = new HttpWorkerLink({ serverUrl, token: 'hbw_test', clock: clockFromFakeTimers(fake), firmwareCacheDir: cacheDir, logError: (m) => errors.push(m), ...options });
  return { http, fake, cacheDir, errors };
}

describe('HttpWorkerLink', () => {
  it('fetches firmware by sha256 once and reads it from its cache after; a cached file that does not match is fetched again', async () => {
    const server = await scripted(() => ({ status: 200, body: firmware, type: 'application/octet-stream' }));
    const { http, cacheDir } = link(server.url);
    const firmwarePath = '/api/v1/worker/jobs/job_1/firmware';
    expect(await http.firmware(ticket)).toEqual(firmware);
    expect(await http.firmware(ticket)).toEqual(firmware);
    expect(server.hits.get(firmwarePath)).toBe(1);
    expect(new Uint8Array(readFileSync(path.join(cacheDir, sha256)))).toEqual(firmware);

    writeFileSync(path.join(cacheDir, sha256), 'corrupted');
    expect(await http.firmware(ticket)).toEqual(firmware);
    expect(server.hits.get(firmwarePath)).toBe(2);
  });

  it('retries an outcome the server cannot take, on its clock, and gives up after deliverForMs with the last error', async () => {
    const server = await scripted(() => ({ status: 503, body: '{"detail":"database unavailable"}', type: 'application/json' }));
    const { http, fake, errors } = link(server.url, { deliverForMs: 10_000 });
    const finishing = http.finish('job_1', outcome).then(
      () => 'delivered',
      (err: unknown) => err,
    );
    // Attempts at 0, 1, 3 and 7 s; the next pause (8 s) would end past the 10 s window.
    for (let i = 0; i < 20; i++) {
      await fake.tickAsync(1_000);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const result = await finishing;
    expect(result).toBeInstanceOf(WorkerServerError);
    expect((result as WorkerServerError).status).toBe(503);
    expect(server.hits.get('/api/v1/worker/jobs/job_1/finish')).toBe(4);
    expect(errors).toEqual([1_000, 2_000, 4_000].map((ms) => `delivering the outcome of job job_1 failed; trying again in ${ms} ms`));
  });

  it('does not retry an outcome the server refuses (the job is no longer this worker’s)', async () => {
    const server = await scripted(() => ({ status: 409, body: '{"detail":"job job_1 is failed: this worker no longer holds it"}', type: 'application/json' }));
    const { http } = link(server.url);
    await expect(http.finish('job_1', outcome)).rejects.toMatchObject({ status: 409, detail: 'job job_1 is failed: this worker no longer holds it' });
    expect(server.hits.get('/api/v1/worker/jobs/job_1/finish')).toBe(1);
  });
});
