import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { HttpWorkerLink } from './http-worker-link.js';

/** A stand-in bench server on loopback: answers each UART report with the next status of `statuses` (then 200), recording the bodies. */
async function standIn(statuses: number[]): Promise<{ url: string; reports: Array<{ offset: number; chunks: Array<{ base64: string }> }>; server: Server }> {
  const reports: Array<{ offset: number; chunks: Array<{ base64: string }> }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      reports.push(JSON.parse(body) as (typeof reports)[number]);
      const status = statuses.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{"ok":true}' : '{"detail":"try later"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reports, server };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

const report = (offset: number, text: string) => ({ offset, chunks: [{ atNanos: offset, bytes: new TextEncoder().encode(text) }], timeBase: 'wall' as const, droppedUartBytes: 0 });
const decoded = (r: { chunks: Array<{ base64: string }> }) => r.chunks.map((c) => Buffer.from(c.base64, 'base64').toString()).join('');

/**
 * The worker's HTTP link sending UART as it is captured, against a stand-in server on loopback:
 * a batch the server could not take goes again with the next one; a refusal does not.
 */
describe('HttpWorkerLink UART reports', () => {
  it('sends a batch the server could not take (503) again with the next one, from its offset, so no range is skipped', async () => {
    const { url, reports, server } = await standIn([503]);
    servers.push(server);
    const fake = createClock(0);
    const errors: string[] = [];
    const link = new HttpWorkerLink({ serverUrl: url, token: 'hbw_x', clock: clockFromFakeTimers(fake), firmwareCacheDir: tmpdir(), logError: (m) => errors.push(m) });
    const sent = (n: number) => waitUntil(systemClock, () => (reports.length >= n && errors.length >= Math.min(n, 1) ? true : undefined), { timeoutMs: 10_000, pollMs: 2, describe: `${n} UART reports` });
    await link.uart('job_1', report(0, 'first\n'));
    fake.tick(100);
    await sent(1);
    await link.uart('job_1', report(6, 'second\n'));
    fake.tick(100);
    await sent(2);
    expect(reports.map((r) => [r.offset, decoded(r)])).toEqual([
      [0, 'first\n'],
      [0, 'first\nsecond\n'],
    ]);
    expect(errors).toHaveLength(1);
  });

  it('does not send again a batch the server refused for good (4xx)', async () => {
    const { url, reports, server } = await standIn([409]);
    servers.push(server);
    const fake = createClock(0);
    const errors: string[] = [];
    const link = new HttpWorkerLink({ serverUrl: url, token: 'hbw_x', clock: clockFromFakeTimers(fake), firmwareCacheDir: tmpdir(), logError: (m) => errors.push(m) });
    await link.uart('job_1', report(0, 'first\n'));
    fake.tick(100);
    await waitUntil(systemClock, () => (errors.length === 1 ? true : undefined), { timeoutMs: 10_000, pollMs: 2, describe: 'the refusal' });
    await link.uart('job_1', report(6, 'second\n'));
    fake.tick(100);
    await waitUntil(systemClock, () => (reports.length === 2 ? true : undefined), { timeoutMs: 10_000, pollMs: 2, describe: 'the second report' });
    expect(reports.map((r) => [r.offset, decoded(r)])).toEqual([
      [0, 'first\n'],
      [6, 'second\n'],
    ]);
  });
});
