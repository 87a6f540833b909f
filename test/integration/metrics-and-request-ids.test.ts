import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger, LogFields } from '../../server/http/logger.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { bearer, getJob, picoElf, submit, withFault } from './bench-job-requests.js';

/** `GET /metrics` (Prometheus) and the request id of every answer (issue 10, "Operable"). */

let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const metricLine = (text: string, name: string, labels: string) => text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));

describe('GET /metrics', () => {
  it('reports jobs by state, finished jobs by board, queue depth, leases and HTTP requests by route pattern', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico' }, picoElf());
    await app.jobReaches(job.job_id, 'done');
    await getJob(app, alice.token, job.job_id);
    await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'uno' }) });
    const res = await app.request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(metricLine(text, 'hilbench_jobs', 'state="done"')).toBe('hilbench_jobs{state="done"} 1');
    expect(metricLine(text, 'hilbench_jobs_finished_total', 'board="pico",state="done",failure=""')).toMatch(/ 1$/);
    expect(metricLine(text, 'hilbench_leases', 'holder="session"')).toBe('hilbench_leases{holder="session"} 1');
    expect(metricLine(text, 'hilbench_agents', '')).toBeUndefined();
    expect(text).toContain('hilbench_agents 1');
    expect(metricLine(text, 'hilbench_http_requests_total', 'method="POST",route="/api/v1/jobs/flash",status="200"')).toMatch(/ 1$/);
    expect(metricLine(text, 'hilbench_http_requests_total', 'method="GET",route="/api/v1/jobs/:job_id",status="200"')).toMatch(/ 1$/);
    // Queue depth per board, job phase durations, and the workers with their last heartbeat (the
    // embedded default's own worker reports like any: decision 0460).
    expect(metricLine(text, 'hilbench_job_phase_duration_seconds_count', 'board="pico",phase="run"')).toMatch(/ 1$/);
    expect(metricLine(text, 'hilbench_worker_online', 'worker="local",label="in this server"')).toMatch(/ 1$/);
    expect(metricLine(text, 'hilbench_worker_last_heartbeat_timestamp_seconds', 'worker="local",label="in this server"')).toBe(
      `hilbench_worker_last_heartbeat_timestamp_seconds{worker="local",label="in this server"} ${TEST_START_MS / 1000}`,
    );
    // Route patterns only: no job id ever becomes a label.
    expect(text).not.toContain(job.job_id);
  });

  it('reports the queue depth of a board: jobs waiting and the one active', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const opened = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'pico' }) });
    const { session_id: session } = (await opened.json()) as { session_id: string };
    const hung = await submit(app, alice.token, { board: 'pico', uart_seconds: '10', session }, withFault('run-hang'));
    await app.jobReaches(hung.job_id, 'running');
    await submit(app, alice.token, { board: 'pico', session }, picoElf());
    await submit(app, alice.token, { board: 'pico', session }, picoElf());
    const text = await (await app.request('/metrics')).text();
    expect(metricLine(text, 'hilbench_board_jobs', 'board="pico",phase="queued"')).toBe('hilbench_board_jobs{board="pico",phase="queued"} 2');
    expect(metricLine(text, 'hilbench_board_jobs', 'board="pico",phase="active"')).toBe('hilbench_board_jobs{board="pico",phase="active"} 1');
  });

  it('reports the connection cap: connections open, closed for room, refused (decision 1040)', async () => {
    app = await startBenchTestApp({ maxConnections: 1 });
    // A client answered on keep-alive, then waiting for its next head, holds the one place.
    const { hostname, port } = new URL(app.url);
    const idle = connect(Number(port), hostname);
    let received = '';
    idle.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    idle.on('error', () => {}); // a reset is one way of being closed
    const idleClosed = new Promise((resolve) => idle.once('close', resolve));
    idle.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise<void>((resolve) => idle.on('data', () => received.includes('\r\n\r\n{') && resolve()));
    // The scrape can only be served by closing it for room.
    const text = await (await app.request('/metrics')).text();
    await idleClosed;
    expect(text).toContain('# TYPE hilbench_http_connections gauge');
    expect(text).toContain('# TYPE hilbench_http_connections_closed_for_room_total counter');
    expect(text.split('\n').filter((l) => l.startsWith('hilbench_http_connections'))).toEqual([
      'hilbench_http_connections 1',
      'hilbench_http_connections_closed_for_room_total 1',
      'hilbench_http_connections_refused_total 0',
    ]);
  });

  it('asks for the metrics token when the server has one', async () => {
    app = await startBenchTestApp({ metricsToken: 'scrape-me' });
    expect((await app.request('/metrics')).status).toBe(401);
    expect((await app.request('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await app.request('/metrics', { headers: { authorization: 'Bearer scrape-me' } })).status).toBe(200);
  });

  it('reads the metrics token as the admin token is read: the scheme in any case, the token compared whole', async () => {
    app = await startBenchTestApp({ metricsToken: 'scrape-me' });
    const status = async (authorization: string) => (await app!.request('/metrics', { headers: { authorization } })).status;
    expect(await status('bearer scrape-me')).toBe(200);
    expect(await status('BEARER scrape-me')).toBe(200);
    for (const wrong of ['Bearer scrape-m', 'Bearer scrape-me2', 'Basic scrape-me', 'Bearer', 'scrape-me']) expect([wrong, await status(wrong)]).toEqual([wrong, 401]);
  });
});

describe('logs', () => {
  it('write one line per job transition with the job id, and one per request at debug with its request id', async () => {
    const records: Array<{ level: string; message: string; fields?: LogFields }> = [];
    const logger: Logger = {
      info: (message, fields) => records.push({ level: 'info', message, fields }),
      warn: (message, fields) => records.push({ level: 'warn', message, fields }),
      error: (message, _cause, fields) => records.push({ level: 'error', message, fields }),
      debug: (message, fields) => records.push({ level: 'debug', message, fields }),
    };
    app = await startBenchTestApp({ logger });
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico' }, picoElf());
    await app.jobReaches(job.job_id, 'done');
    await app.idle();
    const transitions = records.filter((r) => r.fields?.jobId === job.job_id);
    expect(transitions.map((r) => `${r.level}: ${r.message}`)).toEqual(['queued', 'flashing', 'running', 'done'].map((state) => `info: job ${job.job_id} ${state}`));
    expect(transitions.map((r) => r.fields?.state)).toEqual(['queued', 'flashing', 'running', 'done']);

    await app.request('/api/v1/health', { headers: { 'x-request-id': 'proxy-7' } });
    expect(records.find((r) => r.level === 'debug' && r.fields?.requestId === 'proxy-7')).toMatchObject({ message: 'GET /api/v1/health 200' });
  });
});

describe('request ids', () => {
  it('echoes a sane incoming X-Request-Id and makes one otherwise', async () => {
    app = await startBenchTestApp();
    expect((await app.request('/api/v1/health', { headers: { 'x-request-id': 'proxy-42.a' } })).headers.get('x-request-id')).toBe('proxy-42.a');
    const made = (await app.request('/api/v1/health', { headers: { 'x-request-id': 'bad id\twith spaces' } })).headers.get('x-request-id');
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    expect((await app.request('/no/such/path')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
