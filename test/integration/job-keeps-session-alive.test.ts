import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';
import { ClockedUartBackend, clockedTranscript } from './clocked-uart-backend.js';

/**
 * A job's own run keeps its session alive (decision 0211). The defect: with `idle_seconds=10`,
 * `uart_seconds=15` and no heartbeat, the session expired mid-run, the job was cancelled with its
 * UART thrown away, and another agent took the board two seconds later.
 */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp({ backends: ({ clock }) => ({ mock: new ClockedUartBackend(clock) }) });
});
afterEach(async () => {
  await app.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });


/** Advances the fake clock by `ms` one second at a time, the fake clock's own async ticks letting the job's store writes run between. */
async function advance(ms: number) {
  for (let left = ms; left > 0; left -= 1_000) {
    await app.fake.tickAsync(Math.min(1_000, left));
  }
}

async function openSession(token: string, fields: Record<string, string>) {
  return app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams(fields) });
}

async function flash(token: string, fields: Record<string, string>) {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
  const res = await app.request('/api/v1/jobs/flash', { method: 'POST', headers: bearer(token), body });
  expect(res.status).toBe(200);
  return ((await res.json()) as { job_id: string }).job_id;
}

async function get<T>(token: string, path: string): Promise<T> {
  const res = await app.request(path, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

interface SessionJson {
  state: string;
  expires_at: string;
  last_heartbeat_at: string | null;
}

interface JobJson {
  state: string;
  uart: { text: string; bytes: number } | null;
  stop: { reason: string; elapsed_seconds: number } | null;
  failure: { kind: string; message: string } | null;
  finished_at: string | null;
}

describe('a job keeps its session alive', () => {
  it('idle 10 s, uart 15 s, no heartbeat: the job completes with its full UART and no one else takes the board mid-run', async () => {
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const opened = await openSession(alice.token, { board: 'pico', idle_seconds: '10' });
    const { session_id: sid } = (await opened.json()) as { session_id: string };
    const jobId = await flash(alice.token, { board: 'pico', session: sid, uart_seconds: '15' });
    await app.jobReaches(jobId, 'running');

    // Past the idle time with no heartbeat: the running job is the session's activity.
    await advance(12_000);
    expect(await get<SessionJson>(alice.token, `/api/v1/sessions/${sid}`)).toMatchObject({
      state: 'active',
      expires_at: '2026-01-01T00:00:22.000Z',
      last_heartbeat_at: null,
    });
    const taken = await openSession(bob.token, { board: 'pico' });
    expect(taken.status).toBe(409);
    expect(((await taken.json()) as { detail: string }).detail).toMatch(/^board pico is leased by agent "alice" until 2026-01-01T00:00:22.000Z/);
    expect((await get<JobJson>(alice.token, `/api/v1/jobs/${jobId}`)).state).toBe('running');

    await advance(3_000);
    await app.idle();
    const job = await get<JobJson>(alice.token, `/api/v1/jobs/${jobId}`);
    expect(job).toMatchObject({ state: 'done', failure: null, stop: { reason: 'elapsed', elapsed_seconds: 15 }, finished_at: '2026-01-01T00:00:15.000Z' });
    expect(job.uart!.text).toBe(clockedTranscript(150));

    // The idle time starts again when the job finishes: 10 s later, with no heartbeat, the lease ends.
    expect(await get<SessionJson>(alice.token, `/api/v1/sessions/${sid}`)).toMatchObject({ state: 'active', expires_at: '2026-01-01T00:00:25.000Z' });
    await advance(9_000);
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(409);
    await advance(1_000);
    expect(await get<SessionJson>(alice.token, `/api/v1/sessions/${sid}`)).toMatchObject({ state: 'expired' });
    expect(app.logger.lines).toContain(`info: session ${sid} on pico expired; the board is free`);
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(200);
  });

  it('a queued job keeps the session alive too, until the last job of the session finishes', async () => {
    const alice = await app.register('alice');
    const { session_id: sid } = (await (await openSession(alice.token, { board: 'pico', idle_seconds: '10' })).json()) as { session_id: string };
    const first = await flash(alice.token, { board: 'pico', session: sid, uart_seconds: '15' });
    await app.jobReaches(first, 'running');
    const second = await flash(alice.token, { board: 'pico', session: sid, uart_seconds: '8' });
    await advance(15_000);
    await app.jobReaches(second, 'running');
    expect((await get<JobJson>(alice.token, `/api/v1/jobs/${first}`)).state).toBe('done');
    await advance(8_000);
    await app.idle();
    expect(await get<JobJson>(alice.token, `/api/v1/jobs/${second}`)).toMatchObject({ state: 'done', finished_at: '2026-01-01T00:00:23.000Z' });
    expect((await get<JobJson>(alice.token, `/api/v1/jobs/${second}`)).uart!.text).toBe(clockedTranscript(80));
    expect(await get<SessionJson>(alice.token, `/api/v1/sessions/${sid}`)).toMatchObject({ state: 'active', expires_at: '2026-01-01T00:00:33.000Z' });
  });
});
