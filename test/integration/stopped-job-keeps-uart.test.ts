import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { UART_SAVE_INTERVAL_MS } from '../../server/bench/workers/uart-record.js';
import { picoTestElf } from '../support/make-elf.js';
import { CLOCKED_LINE_PERIOD_MS, ClockedUartBackend, clockedTranscript } from './clocked-uart-backend.js';

/**
 * A job cancelled or interrupted for any reason keeps the UART it captured up to then, with the
 * reason in `failure` (decision 0212): its session ended, its deadline passed, the server shut
 * down, or the server died and a restart found it running.
 */

const apps: BenchTestApp[] = [];
/** Data dirs this file copied (the harness removes only the ones it made). */
const copies: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0).reverse()) await app.close();
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The data dir as a crash leaves it: the database and its write-ahead log as committed, the
 * firmware blobs, and no lock (the kernel drops a dead process's lock). The SQLite shared-memory
 * index is left out: SQLite rebuilds it from the log, as after a power cut.
 */
function crashImage(dataDir: string): string {
  const copy = mkdtempSync(path.join(tmpdir(), 'hilbench-crash-'));
  copies.push(copy);
  cpSync(dataDir, copy, { recursive: true, filter: (file) => !/(hilbench\.(lock|pid)|-shm)$/.test(file) });
  return copy;
}

const withClockedBoards: Partial<BenchServiceConfig> = { backends: ({ clock }) => ({ mock: new ClockedUartBackend(clock) }) };

async function start(overrides: Parameters<typeof startBenchTestApp>[0] = {}): Promise<BenchTestApp> {
  const app = await startBenchTestApp({ ...withClockedBoards, ...overrides });
  apps.push(app);
  return app;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });


/** Advances `app`'s fake clock by `ms` in steps of at most one second, the fake clock's own async ticks letting store writes run between. */
async function advance(app: BenchTestApp, ms: number) {
  for (let left = ms; left > 0; left -= 1_000) {
    await app.fake.tickAsync(Math.min(1_000, left));
  }
}

interface JobJson {
  state: string;
  uart: { text: string; bytes: number; dropped_bytes: number; time_base: string; chunks: Array<{ at_seconds: number; text: string }> } | null;
  stop: unknown;
  failure: { kind: string; message: string } | null;
}

/** Registers alice, opens a session on pico (idle 10 s) and starts a 15 s job in it. */
async function runningJob(app: BenchTestApp) {
  const { token } = await app.register('alice');
  const opened = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico', idle_seconds: '10' }) });
  const { session_id: sid } = (await opened.json()) as { session_id: string };
  const body = new FormData();
  body.set('board', 'pico');
  body.set('session', sid);
  body.set('uart_seconds', '15');
  body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
  const res = await app.request('/api/v1/jobs/flash', { method: 'POST', headers: bearer(token), body });
  expect(res.status).toBe(200);
  const { job_id: jobId } = (await res.json()) as { job_id: string };
  await app.jobReaches(jobId, 'running');
  return { token, sid, jobId };
}

async function getJob(app: BenchTestApp, token: string, jobId: string): Promise<JobJson> {
  const res = await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await res.json()) as JobJson;
}

describe('a stopped job keeps the UART it captured', () => {
  it('session ended by the agent mid-run: cancelled, with the UART up to the end and the reason', async () => {
    const app = await start();
    const { token, sid, jobId } = await runningJob(app);
    await advance(app, 5_050);
    // The running job's saved UART is not shown before it finishes: `uart` stays null until then.
    expect(await getJob(app, token, jobId)).toMatchObject({ state: 'running', uart: null });
    const ended = await app.request(`/api/v1/sessions/${sid}/end`, { method: 'POST', headers: bearer(token) });
    expect(ended.status).toBe(200);
    await app.idle();

    const job = await getJob(app, token, jobId);
    expect(job).toMatchObject({
      state: 'failed',
      stop: null,
      failure: { kind: 'cancelled', message: `job ${jobId} cancelled: session ${sid} ended at 2026-01-01T00:00:05.050Z` },
    });
    expect(job.uart).toMatchObject({ text: clockedTranscript(50), bytes: clockedTranscript(50).length, dropped_bytes: 0, time_base: 'wall' });
    expect(job.uart!.chunks.at(-1)).toEqual({ at_seconds: 5, text: 'line 50\r\n' });
  });

  it('deadline: failed as timeout, with the UART up to the deadline', async () => {
    // A 15 s job on a dispatcher allowing 1.05 s to flash and 0.1 s per UART second: deadline 2.55 s.
    const app = await start({ dispatcherOptions: { flashTimeoutMs: 1_050, runMsPerUartSecond: 100, marginMs: 0 } });
    const { token, jobId } = await runningJob(app);
    await advance(app, 3_000);
    await app.idle();
    const job = await getJob(app, token, jobId);
    expect(job.failure!.kind).toBe('timeout');
    expect(job.failure!.message).toMatch(/did not finish within 2550 ms .* waiting for 15 s of UART capture on mock/);
    expect(job.uart!.text).toBe(clockedTranscript(25));
  });

  it('server shutdown mid-run: the next start fails the job as interrupted, with the UART up to the shutdown', async () => {
    const first = await start();
    const { token, jobId } = await runningJob(first);
    await advance(first, 5_050);
    apps.splice(apps.indexOf(first), 1);
    const app = await first.restart();
    apps.push(app);
    await app.idle();
    const job = await getJob(app, token, jobId);
    expect(job).toMatchObject({
      state: 'failed',
      failure: { kind: 'interrupted', message: 'the bench service restarted while this job was running; submit it again' },
    });
    expect(job.uart!.text).toBe(clockedTranscript(50));
  });

  it('server died mid-run: a restart fails the job as interrupted, with the UART saved while it ran', async () => {
    const dead = await start();
    const { token, sid, jobId } = await runningJob(dead);
    const crashAtMs = 5_050;
    await advance(dead, crashAtMs);
    // The process "dies": nothing of it runs again (its clock never moves; it is closed only after
    // the test, and writes nothing to the copy). A new server starts on what it left on disk.
    const app = await start({ dataDir: crashImage(dead.dataDir), fake: createClock(dead.fake.now) });
    await app.idle();

    const job = await getJob(app, token, jobId);
    expect(job).toMatchObject({
      state: 'failed',
      failure: { kind: 'interrupted', message: 'the bench service restarted while this job was running; submit it again' },
    });
    // Saved at most every UART_SAVE_INTERVAL_MS: only the lines of the last interval may be lost.
    const lines = job.uart!.text.split('\r\n').length - 1;
    expect(job.uart!.text).toBe(clockedTranscript(lines));
    expect(lines * CLOCKED_LINE_PERIOD_MS).toBeGreaterThanOrEqual(crashAtMs - UART_SAVE_INTERVAL_MS - CLOCKED_LINE_PERIOD_MS);
    // The job ended with the restart; its session's idle time starts then, so the agent can come back.
    const session = await app.request(`/api/v1/sessions/${sid}`, { headers: bearer(token) });
    expect(await session.json()).toMatchObject({ state: 'active', expires_at: '2026-01-01T00:00:15.050Z' });
  });
});
