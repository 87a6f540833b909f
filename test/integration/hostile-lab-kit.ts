import { afterEach, expect } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer, flash } from './bench-job-requests.js';

/**
 * What the hostile-worker tests share (bench-hostile-lab*.test.ts): a lab on either store with no
 * worker of its own, worker tokens, a worker's raw requests, and a job queued or running on a pico.
 * Everything a test starts is closed after it.
 */

export const ADMIN = 'admin-secret';
export const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

export type Store = 'sqlite' | 'postgres';

export async function startLab(store: Store, overrides: Parameters<typeof startBenchTestApp>[0] = {}): Promise<BenchTestApp> {
  const database = store === 'postgres' ? await createTestDatabase({ migrated: 'bench' }) : undefined;
  if (database) cleanups.push(database.drop);
  const app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, ...(database ? { databaseUrl: database.url } : {}), ...overrides });
  cleanups.push(() => app.close());
  return app;
}

export async function createWorker(app: BenchTestApp, label: string): Promise<{ token: string; workerId: string }> {
  const res = await app.request('/admin/workers', { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label }) });
  expect(res.status).toBe(200);
  const { token, worker_id: workerId } = (await res.json()) as { token: string; worker_id: string };
  return { token, workerId };
}

/** A worker token's request with a JSON body (GET without one). */
export const asWorker = (app: BenchTestApp, token: string, path: string, body?: unknown) =>
  app.request(path, { method: body === undefined ? 'GET' : 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

export const PICO = { board: 'pico', backend: 'probe', available: true };

/** Announces the pico for `worker`, queues a job of a new agent on it; the job's id and the agent's token. */
export async function queuedJob(app: BenchTestApp, worker: string): Promise<{ jobId: string; agent: string }> {
  expect((await asWorker(app, worker, '/api/v1/worker/announce', { boards: [PICO] })).status).toBe(200);
  app.fake.tick(5_000); // past the availability cache
  const { token: agent } = await app.register('alice');
  const submitted = await flash(app, agent, { board: 'pico', uart_seconds: '5' }, picoTestElf());
  expect(submitted.status, await submitted.clone().text()).toBe(200);
  return { jobId: ((await submitted.json()) as { job_id: string }).job_id, agent };
}

/** `queuedJob`, claimed by `worker` and running. */
export async function runningJob(app: BenchTestApp, worker: string): Promise<{ jobId: string; agent: string }> {
  const queued = await queuedJob(app, worker);
  const claimed = (await (await asWorker(app, worker, '/api/v1/worker/claim', { boards: ['pico'], wait_seconds: 0 })).json()) as { job: { job_id: string } | null };
  expect(claimed.job?.job_id).toBe(queued.jobId);
  expect(await (await asWorker(app, worker, `/api/v1/worker/jobs/${queued.jobId}/running`, {})).json()).toEqual({ stop: null });
  return queued;
}

/**
 * Moves the fake clock a second at a time (each sweep arms the next when it is done, so one big
 * tick runs one sweep) until job `jobId` failed, for at most `maxFakeMs` of fake time.
 */
export async function sweptUntilFailed(app: BenchTestApp, jobId: string, options: { maxFakeMs: number }): Promise<void> {
  let seen = 'not looked at yet';
  let fakeMs = 0;
  await waitUntil(
    systemClock,
    async () => {
      const job = await app.server.service.store.getJob(jobId);
      seen = `${job?.state ?? 'missing'} after ${fakeMs} fake ms`;
      if (job?.state === 'failed') return job;
      if (fakeMs >= options.maxFakeMs) throw new Error(`job ${jobId} still ${seen}: the sweep never failed it`);
      app.fake.tick(1_000);
      fakeMs += 1_000;
      return undefined;
    },
    { timeoutMs: 20_000, pollMs: 5, describe: `job ${jobId} to fail by the sweep`, lastSeen: () => seen },
  );
}

/** The UART text saved for running job `jobId` once `done` says it is complete (bounded poll of the store). */
export async function savedUartText(app: BenchTestApp, jobId: string, done: (text: string) => boolean): Promise<string> {
  let seen = 'nothing saved';
  return waitUntil(
    systemClock,
    async () => {
      const uart = (await app.server.service.store.getJob(jobId))?.uart;
      seen = uart ? JSON.stringify(new TextDecoder().decode(uart.bytes)) : 'nothing saved';
      return uart && done(new TextDecoder().decode(uart.bytes)) ? new TextDecoder().decode(uart.bytes) : undefined;
    },
    { timeoutMs: 20_000, pollMs: 5, describe: `the UART of job ${jobId} to be saved`, lastSeen: () => seen },
  );
}

export const uartReport = (offset: number, text: string) => ({ offset, time_base: 'wall', dropped_bytes: 0, chunks: [{ at_ns: offset, base64: Buffer.from(text).toString('base64') }] });
