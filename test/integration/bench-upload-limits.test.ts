import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { flash } from './bench-job-requests.js';

/** Firmware upload limits of the flash-job endpoint over real HTTP: refused early, nothing stored. */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

const firmwareFiles = () => readdirSync(path.join(app.dataDir, 'firmware'));

describe('upload limits', () => {
  it('refuses an upload far over the limit while it streams, without buffering it, and stores nothing', async () => {
    await app.close();
    app = await startBenchTestApp({ limits: { maxFirmwareBytes: 64 * 1024 } });
    const { token } = await app.register();
    const boundary = 'hilbench-test-boundary';
    const url = new URL(`${app.url}/api/v1/jobs/flash`);
    const chunk = Buffer.alloc(64 * 1024, 0x41);
    const maxChunks = 4096; // 256 MiB if the server never answered
    let sent = 0;
    const result = await new Promise<{ status: number; body: string; sentBytes: number; connection: string | undefined }>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
      });
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString(), sentBytes: sent, connection: res.headers.connection }));
      });
      req.on('error', (err) => {
        if (!answered) reject(err);
      });
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="board"\r\n\r\npico\r\n`);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="firmware"; filename="huge.elf"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      const pump = () => {
        if (answered || sent >= maxChunks * chunk.length) return;
        sent += chunk.length;
        if (req.write(chunk)) setImmediate(pump);
        else req.once('drain', pump);
      };
      pump();
    });
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body)).toEqual({ detail: 'the file in field "firmware" is larger than the limit of 65536 bytes (64 KiB)' });
    expect(result.connection).toBe('close');
    // The answer came while the upload was still going, long before the client's 256 MiB.
    expect(result.sentBytes).toBeLessThan(64 * 1024 * 1024);
    expect(firmwareFiles()).toEqual([]);
    expect((await app.server.service.store.counts()).jobsTotal).toBe(0);
  });

  it('refuses an unauthenticated upload from its headers', async () => {
    const body = new FormData();
    body.set('board', 'pico');
    body.set('firmware', new Blob([new Uint8Array(1024 * 1024)]), 'fw.elf');
    const res = await app.request('/api/v1/jobs/flash', { method: 'POST', body });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(firmwareFiles()).toEqual([]);
  });

  it('refuses a declared Content-Length over the limit before reading the body', async () => {
    await app.close();
    app = await startBenchTestApp({ limits: { maxFirmwareBytes: 1024 } });
    const { token } = await app.register();
    const big = new Uint8Array(200 * 1024);
    const res = await flash(app, token, { board: 'pico' }, big);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ detail: `the request body is larger than the limit of ${1024 + 64 * 1024} bytes (65 KiB)` });
  });

  it('lets fetch read a 413 answered before the end of a body far over the limit (node reset the connection, and fetch reported EPIPE)', async () => {
    const { token } = await app.register();
    // In a process of its own, as a client is (in the server's, it read the answer before the reset came).
    const client = `
      const body = new FormData();
      body.set('board', 'pico');
      body.set('firmware', new Blob([new Uint8Array(32 * 1024 * 1024)]), 'fw.elf');
      fetch(process.argv[1], { method: 'POST', headers: { authorization: 'Bearer ' + process.argv[2] }, body })
        .then(async (res) => console.log(JSON.stringify([res.status, await res.json()])))
        .catch((err) => console.log(JSON.stringify(['failed', err.cause?.code ?? err.message])));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', client, `${app.url}/api/v1/jobs/flash`, token]);
    expect(JSON.parse(stdout)).toEqual([413, { detail: 'the request body is larger than the limit of 4259840 bytes (4160 KiB)' }]);
  });
});
