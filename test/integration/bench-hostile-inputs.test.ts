import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer, flash } from './bench-job-requests.js';

/**
 * What a stranger (an agent anyone can register) or a leaked worker token sends the bench that no
 * honest client does, on both stores: ids holding a NUL (PostgreSQL cannot even compare a text
 * with one, and answered 500), worker diagnostics holding one, and numbers no column or date
 * holds. Each is answered as documented (404, 422, or stored with U+FFFD for the NUL), never a
 * 500, and a refused request changes nothing.
 */

const ADMIN = 'admin-secret';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function lab(store: 'sqlite' | 'postgres'): Promise<{ app: BenchTestApp; worker: string }> {
  const database = store === 'postgres' ? await createTestDatabase({ migrated: 'bench' }) : undefined;
  if (database) cleanups.push(database.drop);
  const app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, ...(database ? { databaseUrl: database.url } : {}) });
  cleanups.push(() => app.close());
  const created = await app.request('/admin/workers', { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label: 'pi' }) });
  const { token } = (await created.json()) as { token: string };
  return { app, worker: token };
}

/** A worker token's request with a JSON body (GET without one). */
const asWorker = (app: BenchTestApp, token: string, path: string, body?: unknown) =>
  app.request(path, { method: body === undefined ? 'GET' : 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

/** Announces the pico (its health kept in the server's store), claims a job of `agent` on it and starts it. */
async function runningJob(app: BenchTestApp, worker: string, agent: string): Promise<string> {
  const board = { board: 'pico', backend: 'probe', available: true, keeps_health: true, health_check: true };
  expect((await asWorker(app, worker, '/api/v1/worker/announce', { boards: [board] })).status).toBe(200);
  app.fake.tick(5_000); // past the availability cache
  const submitted = await flash(app, agent, { board: 'pico', uart_seconds: '5' }, picoTestElf());
  const { job_id: jobId } = (await submitted.json()) as { job_id: string };
  const claimed = (await (await asWorker(app, worker, '/api/v1/worker/claim', { boards: ['pico'], wait_seconds: 0 })).json()) as { job: { job_id: string } | null };
  expect(claimed.job?.job_id).toBe(jobId);
  expect((await asWorker(app, worker, `/api/v1/worker/jobs/${jobId}/running`, {})).status).toBe(200);
  return jobId;
}

const detailOf = async (res: Response) => ((await res.json()) as { detail: unknown }).detail;

describe.each(['sqlite', 'postgres'] as const)('hostile input to the bench (%s store)', (store) => {
  it('answers 404 for an id holding a NUL on every route that looks one up, agent and worker alike', async () => {
    const { app, worker } = await lab(store);
    const alice = await app.register('alice');
    await runningJob(app, worker, alice.token);
    const agent = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { ...bearer(alice.token), 'content-type': 'application/json', ...init.headers } });
    const answers: Array<[string, Response]> = [
      ['GET job', await agent('/api/v1/jobs/job_%00')],
      ['GET job ?wait', await agent('/api/v1/jobs/job_%00?wait=1')],
      ['POST job uart', await agent('/api/v1/jobs/job_%00/uart', { method: 'POST', body: '{"text": "a"}' })],
      ['GET job uart', await agent('/api/v1/jobs/job_%00/uart')],
      ['GET session', await agent('/api/v1/sessions/ses_%00')],
      ['POST session heartbeat', await agent('/api/v1/sessions/ses_%00/heartbeat', { method: 'POST' })],
      ['POST session end', await agent('/api/v1/sessions/ses_%00/end', { method: 'POST' })],
      ['worker input', await asWorker(app, worker, '/api/v1/worker/jobs/job_%00/input', { written_through: 0, wait_seconds: 0 })],
      ['worker running', await asWorker(app, worker, '/api/v1/worker/jobs/job_%00/running', {})],
      ['worker heartbeat', await asWorker(app, worker, '/api/v1/worker/jobs/job_%00/heartbeat', {})],
      ['worker firmware', await asWorker(app, worker, '/api/v1/worker/jobs/job_%00/firmware')],
      ['worker health check', await asWorker(app, worker, '/api/v1/worker/health-checks/hc_%00', { passed: true, uart_text: '', elapsed_ns: 1 })],
      ['admin revoke', await app.request('/admin/workers/wk_%00/revoke', { method: 'POST', headers: { 'x-admin-token': ADMIN } })],
    ];
    for (const [what, res] of answers) expect([what, res.status, await detailOf(res)]).toEqual([what, 404, 'Not Found']);
    // The operator's console, signed in.
    const signInPage = await (await app.request('/console/sign-in')).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(signInPage)![1]!;
    const signedIn = await app.request('/console/sign-in', { method: 'POST', redirect: 'manual', body: new URLSearchParams({ token: ADMIN, csrf }) });
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    for (const path of ['/console/jobs/job_%00', '/console/jobs/job_%00/uart', '/console/boards/pi%00co']) {
      expect([path, (await app.request(path, { headers: { cookie } })).status]).toEqual([path, 404]);
    }
    // Credentials are still checked first.
    expect((await app.request('/api/v1/jobs/job_%00')).status).toBe(401);
  });

  it("stores a worker's diagnostics holding a NUL with U+FFFD in its place, and refuses numbers no store or date holds", async () => {
    const { app, worker } = await lab(store);
    const alice = await app.register('alice');
    const jobId = await runningJob(app, worker, alice.token);
    const health = '/api/v1/worker/boards/pico/health';
    const put = (body: unknown) => asWorker(app, worker, health, body);
    const refused: Array<[unknown, unknown[]]> = [
      [{ consecutive_failures: 2 ** 31, last_failure: null, quarantine: null }, ['body', 'consecutive_failures']],
      [{ consecutive_failures: 3, last_failure: 'x', quarantine: { since_ms: 8.64e15 + 1, reason: 'r' } }, ['body', 'quarantine', 'since_ms']],
      [{ consecutive_failures: 3, last_failure: 'x', quarantine: { since_ms: Number.MAX_SAFE_INTEGER, reason: 'r' } }, ['body', 'quarantine', 'since_ms']],
    ];
    for (const [body, loc] of refused) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(((await detailOf(res)) as Array<{ loc: unknown[] }>)[0]!.loc).toEqual(loc);
    }
    expect(await (await asWorker(app, worker, health)).json()).toEqual({ consecutive_failures: 0, last_failure: null, quarantine: null });

    const quarantined = await put({ consecutive_failures: 3, last_failure: 'flash said \u0000\u0001', quarantine: { since_ms: 8.64e15, reason: 'after 3 failures: \u0000' } });
    expect(quarantined.status, await quarantined.clone().text()).toBe(200);
    expect(await (await asWorker(app, worker, health)).json()).toEqual({
      consecutive_failures: 3,
      last_failure: 'flash said \ufffd\u0001',
      quarantine: { since_ms: 8.64e15, reason: 'after 3 failures: \ufffd' },
    });
    // The administrator sees it (a quarantine beyond what a date holds used to be dropped from the view).
    const admin = (await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()) as { boards: Array<{ id: string; health: unknown }> };
    expect(admin.boards.find((b) => b.id === 'pico')!.health).toMatchObject({ quarantined: true, quarantined_since: '+275760-09-13T00:00:00.000Z', quarantine_reason: 'after 3 failures: \ufffd' });

    const failed = await asWorker(app, worker, `/api/v1/worker/jobs/${jobId}/finish`, { outcome: { state: 'failed', failure: { kind: 'flash-failed', message: 'probe printed \u0000' }, uart: null } });
    expect(failed.status, await failed.clone().text()).toBe(200);
    const job = (await (await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(alice.token) })).json()) as { state: string; failure: { message: string } };
    expect([job.state, job.failure.message]).toEqual(['failed', 'probe printed \ufffd']);
  });

  it('refuses a worker label with control characters (422), creating no worker', async () => {
    const { app } = await lab(store);
    const res = await app.request('/admin/workers', { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label: 'pi\u0000' }) });
    expect(res.status).toBe(422);
    expect(((await detailOf(res)) as Array<{ loc: unknown[] }>)[0]!.loc).toEqual(['body', 'label']);
    const { workers } = (await (await app.request('/admin/workers', { headers: { 'x-admin-token': ADMIN } })).json()) as { workers: Array<{ label: string }> };
    expect(workers.map((w) => w.label)).toEqual(['pi']);
  });
});
