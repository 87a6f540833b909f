import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer, getJob, picoElf, submit } from './bench-job-requests.js';

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
    // Route patterns only: no job id ever becomes a label.
    expect(text).not.toContain(job.job_id);
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

describe('request ids', () => {
  it('echoes a sane incoming X-Request-Id and makes one otherwise', async () => {
    app = await startBenchTestApp();
    expect((await app.request('/api/v1/health', { headers: { 'x-request-id': 'proxy-42.a' } })).headers.get('x-request-id')).toBe('proxy-42.a');
    const made = (await app.request('/api/v1/health', { headers: { 'x-request-id': 'bad id\twith spaces' } })).headers.get('x-request-id');
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    expect((await app.request('/no/such/path')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
