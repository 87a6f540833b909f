import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';

/**
 * Every status a route answers below is documented for that route in
 * `/openapi.json`. Each request is made for real and its status recorded under the route it hit.
 */

let app: BenchTestApp;
const answered = new Map<string, Set<number>>();

beforeAll(async () => {
  app = await startBenchTestApp({ limits: { maxQueuedJobsPerBoard: 1, maxFirmwareBytes: 1024 } });
});
afterAll(async () => {
  await app.close();
});

const picoElf = (fault?: string) => picoTestElf(fault ? { fault } : {});
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Sends a request and records its status under `method path` (the OpenAPI path template). */
async function hit(route: string, pathAndQuery: string, init: RequestInit = {}): Promise<Response> {
  const [method] = route.split(' ');
  const res = await app.request(pathAndQuery, { method, ...init });
  const statuses = answered.get(route) ?? new Set<number>();
  statuses.add(res.status);
  answered.set(route, statuses);
  return res;
}

const malformedMultipart = {
  'content-type': 'multipart/form-data; boundary=----hilbench',
};
const malformedBody = '------hilbench\r\nContent-Disposition: form-data; name="board"\r\n\r\npico'; // never closed

function flashForm(fields: Record<string, string>, elf?: Uint8Array) {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  if (elf) body.set('firmware', new Blob([elf]), 'fw.elf');
  return body;
}

describe('every status a route answers is documented for it', () => {
  it('exercises the routes and finds each answered status in /openapi.json', async () => {
    const REG = 'POST /api/v1/agents/register';
    const OPEN = 'POST /api/v1/sessions';
    const FLASH_JOB = 'POST /api/v1/jobs/flash';
    const JOB = 'GET /api/v1/jobs/{job_id}';
    const SES = 'GET /api/v1/sessions/{sid}';
    const END = 'POST /api/v1/sessions/{sid}/end';
    const BEAT = 'POST /api/v1/sessions/{sid}/heartbeat';

    // Agents
    const reg = await hit(REG, '/api/v1/agents/register', { body: new URLSearchParams({ label: 'alice' }) });
    const alice = ((await reg.json()) as { token: string }).token;
    const bob = ((await (await hit(REG, '/api/v1/agents/register', { body: new URLSearchParams({ label: 'bob' }) })).json()) as { token: string }).token;
    await hit(REG, '/api/v1/agents/register', { headers: malformedMultipart, body: malformedBody });
    await hit(REG, '/api/v1/agents/register', { headers: { 'content-type': 'application/json' }, body: '{"label":"x"}' });
    await hit(REG, '/api/v1/agents/register', { body: new URLSearchParams({ label: 'x'.repeat(65) }) });
    await hit(REG, '/api/v1/agents/register', { body: new URLSearchParams({ label: 'x'.repeat(70 * 1024) }) });

    // Sessions
    await hit(OPEN, '/api/v1/sessions', { body: new URLSearchParams({ board: 'pico' }) });
    await hit(OPEN, '/api/v1/sessions', { headers: { ...bearer(alice), ...malformedMultipart }, body: malformedBody });
    await hit(OPEN, '/api/v1/sessions', { headers: { ...bearer(alice), 'content-type': 'application/json' }, body: '{}' });
    await hit(OPEN, '/api/v1/sessions', { headers: bearer(alice), body: new URLSearchParams({ board: 'zx81' }) });
    await hit(OPEN, '/api/v1/sessions', { headers: bearer(alice), body: new URLSearchParams({ board: 'pico', idle_seconds: '1' }) });
    await hit(OPEN, '/api/v1/sessions', { headers: bearer(alice), body: new URLSearchParams({ board: 'x'.repeat(70 * 1024) }) });
    const opened = await hit(OPEN, '/api/v1/sessions', { headers: bearer(alice), body: new URLSearchParams({ board: 'pico' }) });
    const sid = ((await opened.json()) as { session_id: string }).session_id;
    await hit(OPEN, '/api/v1/sessions', { headers: bearer(bob), body: new URLSearchParams({ board: 'pico' }) });
    await hit(SES, `/api/v1/sessions/${sid}`, { headers: bearer(alice) });
    await hit(SES, `/api/v1/sessions/${sid}`, { headers: bearer(bob) });
    await hit(SES, `/api/v1/sessions/${sid}`);
    await hit(BEAT, `/api/v1/sessions/${sid}/heartbeat`, { headers: bearer(alice) });
    await hit(BEAT, '/api/v1/sessions/%ZZ/heartbeat', { headers: bearer(alice) });

    // Jobs
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { body: flashForm({ board: 'pico' }, picoElf()) });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: { ...bearer(alice), ...malformedMultipart }, body: malformedBody });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: { ...bearer(alice), 'content-type': 'application/json' }, body: '{"board":"pico"}' });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(alice), body: flashForm({ board: 'pico' }) });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(alice), body: flashForm({ board: 'zx81' }, picoElf()) });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(alice), body: flashForm({ board: 'pico' }, new Uint8Array(2048)) });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(bob), body: flashForm({ board: 'pico' }, picoElf()) });
    const hung = await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(alice), body: flashForm({ board: 'pico', session: sid }, picoElf('run-hang')) });
    const jobId = ((await hung.json()) as { job_id: string }).job_id;
    await app.jobStarted(jobId);
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(alice), body: flashForm({ board: 'pico', session: sid }, picoElf()) });
    await hit(FLASH_JOB, '/api/v1/jobs/flash', { headers: bearer(alice), body: flashForm({ board: 'pico', session: sid }, picoElf()) });
    await hit(JOB, `/api/v1/jobs/${jobId}`, { headers: bearer(alice) });
    await hit(JOB, '/api/v1/jobs/%ZZ', { headers: bearer(alice) });
    await hit(JOB, `/api/v1/jobs/${jobId}`, { headers: { authorization: 'Basic abc' } });

    await hit(END, `/api/v1/sessions/${sid}/end`, { headers: bearer(alice) });
    await hit(END, `/api/v1/sessions/${sid}/end`, { headers: bearer(alice) });
    await hit('GET /admin', '/admin');
    await app.idle();

    const doc = (await (await app.request('/openapi.json')).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const undocumented: string[] = [];
    for (const [route, statuses] of answered) {
      const [method, p] = route.split(' ') as [string, string];
      const documented = Object.keys(doc.paths[p]?.[method.toLowerCase()]?.responses ?? {});
      for (const status of statuses) if (!documented.includes(String(status))) undocumented.push(`${route} answered ${status}`);
    }
    expect(undocumented).toEqual([]);
    // The form routes were driven through their error statuses, so the check above means something.
    expect([...answered.get(REG)!].sort()).toEqual([200, 400, 413, 415, 422]);
    expect([...answered.get(OPEN)!].sort()).toEqual([200, 400, 401, 404, 409, 413, 415, 422]);
    expect([...answered.get(FLASH_JOB)!].sort()).toEqual([200, 400, 401, 404, 409, 413, 415, 422, 429]);
  });

  it('documents 400 and 500 on the form routes, and 500 on every route', async () => {
    const doc = (await (await app.request('/openapi.json')).json()) as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
    for (const p of ['/api/v1/agents/register', '/api/v1/sessions', '/api/v1/jobs/flash']) {
      expect(doc.paths[p]!.post!.responses['400']!.description).toMatch(/^Malformed body/);
    }
    for (const [p, item] of Object.entries(doc.paths)) {
      // The waitlist belongs to the pages router, which documents its own answers.
      if (!(p.startsWith('/api/') || p.startsWith('/admin')) || p === '/api/v1/waitlist') continue;
      for (const [method, operation] of Object.entries(item)) expect(Object.keys(operation.responses), `${method} ${p}`).toContain('500');
    }
  });
});

describe('the rate limits of the unauthenticated writes', () => {
  it('answer 429, which /openapi.json documents for the agent registration and the waitlist', async () => {
    const limited = await startBenchTestApp({ limits: { agentRegistrationsPerMinute: 1, waitlistJoinsPerMinute: 1 } });
    try {
      const statuses = async (path: string) => {
        const out: number[] = [];
        for (let i = 0; i < 2; i++) out.push((await limited.request(path, { method: 'POST', body: new URLSearchParams({ label: 'x' }) })).status);
        return out;
      };
      expect((await statuses('/api/v1/agents/register'))[1]).toBe(429);
      expect((await statuses('/api/v1/waitlist'))[1]).toBe(429);
      const doc = (await (await limited.request('/openapi.json')).json()) as { paths: Record<string, { post: { responses: Record<string, unknown> } }> };
      expect(Object.keys(doc.paths['/api/v1/agents/register']!.post.responses)).toContain('429');
      expect(Object.keys(doc.paths['/api/v1/waitlist']!.post.responses)).toContain('429');
    } finally {
      await limited.close();
    }
  });
});
