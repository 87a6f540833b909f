import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { systemClock } from '../../core/clock.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createWorkerToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { bearer, getJob, type JobJson, picoElf, submit, withFault } from './bench-job-requests.js';

/**
 * Cancelling a job once its verdict is known (issue 31, decision 0535): owner only, idempotent, a
 * finished job answered as it is; a running job stops at once, keeps its UART, ends `cancelled`
 * with the reason, and its board is free at the answer. Plus the board's session queue as its
 * waiters see it, and the job read as (cut) text.
 */

let app: BenchTestApp;
const workers: LabWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
});

const cancel = (token: string, jobId: string, reason?: string) =>
  app.request(`/api/v1/jobs/${jobId}/cancel`, { method: 'POST', headers: bearer(token), ...(reason === undefined ? {} : { body: new URLSearchParams({ reason }) }) });

const openSession = (token: string, fields: Record<string, string>) => app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams(fields) });

describe('POST /api/v1/jobs/{job_id}/cancel', () => {
  it('stops a running job at once: it ends cancelled with the reason and frees the board', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '5' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(409);

    const res = await cancel(alice.token, job.job_id, 'the verdict is known');
    expect(res.status).toBe(200);
    const body = (await res.json()) as JobJson & { uart: { text: string } | null };
    expect(body.state).toBe('failed');
    expect(body.failure).toEqual({ kind: 'cancelled', message: `job ${job.job_id} cancelled: its agent cancelled it: the verdict is known` });
    // (What it printed stays in `uart`, decision 0212: the mock's hung run prints nothing; the CLI's test shows it on the simulator.)
    // Free at the answer: the next agent gets the board at once.
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(200);

    // Idempotent: the finished job is answered as it is.
    const again = await cancel(alice.token, job.job_id, 'another reason');
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(body);
  });

  it('fails a queued job at once, answers a finished one as it is, and hides other agents’ jobs', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const mallory = await app.register('mallory');
    const sid = ((await (await openSession(alice.token, { board: 'pico' })).json()) as { session_id: string }).session_id;
    const first = await submit(app, alice.token, { board: 'pico', session: sid }, withFault('run-hang'));
    const second = await submit(app, alice.token, { board: 'pico', session: sid }, picoElf());
    await app.jobReaches(first.job_id, 'running');

    expect((await cancel(mallory.token, second.job_id)).status).toBe(404);
    expect((await getJob(app, alice.token, second.job_id)).state).toBe('queued');

    const queued = (await (await cancel(alice.token, second.job_id)).json()) as JobJson;
    expect(queued).toMatchObject({ state: 'failed', failure: { kind: 'cancelled', message: 'cancelled before it started: its agent cancelled it' } });
    expect((await cancel(alice.token, first.job_id)).status).toBe(200);

    const done = await submit(app, alice.token, { board: 'pico', session: sid, uart_seconds: '0.3' }, picoElf());
    await app.idle();
    const finished = await getJob(app, alice.token, done.job_id);
    expect(finished.state).toBe('done');
    expect(await (await cancel(alice.token, done.job_id)).json()).toEqual(finished);
    expect((await cancel(alice.token, 'job_unknown')).status).toBe(404);
  });

  it('refuses a reason with control characters and changes nothing', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    const res = await cancel(alice.token, job.job_id, 'bad\u0007reason');
    expect(res.status).toBe(422);
    expect((await getJob(app, alice.token, job.job_id)).state).toBe('running');
  });

  it('reaches a remote worker through its waiting serial-input fetch, not only at its next claim renewal', async () => {
    // Claims renewed every 100 s of the fake clock, which does not move here: a stop heard only by renewal never arrives.
    app = await startBenchTestApp({ localWorker: false, adminToken: 'admin', workerTimings: { heartbeatSeconds: 5, offlineAfterSeconds: 15, claimSeconds: 300 } });
    const { token } = await createWorkerToken(app.request, { adminToken: 'admin', label: 'pi' });
    workers.push(await startLabWorker({ serverUrl: app.url, token, clock: clockFromFakeTimers(app.fake), boards: ['pico'] }));
    app.fake.tick(5_000);
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '5' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    // The cancel answers once the worker reported the end: no fake time passes meanwhile.
    const res = await cancel(alice.token, job.job_id, 'done here');
    const body = (await res.json()) as JobJson;
    expect(body.state).toBe('failed');
    expect(body.failure).toEqual({ kind: 'cancelled', message: `job ${job.job_id} cancelled: its agent cancelled it: done here` });
  });
});

describe('waiting for a board', () => {
  it('queues for a board the caller’s own flash job holds, and says who waits where', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '5' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    const aliceWaits = openSession(alice.token, { board: 'pico', wait_seconds: '60' });
    const queue = async (token: string) => (await app.request('/api/v1/boards/pico/queue', { headers: bearer(token) })).json();
    await waitUntil(systemClock, async () => ((await queue(alice.token)) as { waiting: number }).waiting === 1 || undefined, { timeoutMs: 20_000, pollMs: 5, describe: 'alice in the queue' });
    expect(await queue(alice.token)).toEqual({ board: 'pico', waiting: 1, position: 1 });
    expect(await queue(bob.token)).toEqual({ board: 'pico', waiting: 1, position: null });
    expect((await app.request('/api/v1/boards/nope/queue', { headers: bearer(bob.token) })).status).toBe(404);

    expect((await cancel(alice.token, job.job_id)).status).toBe(200);
    const granted = await aliceWaits;
    expect(granted.status).toBe(200);
    expect(await queue(alice.token)).toEqual({ board: 'pico', waiting: 0, position: null });
  });
});

describe('GET /api/v1/jobs/{job_id} asked for less', () => {
  it('answers the UART as text without base64 and chunks, or its head and tail with what was cut', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '0.3' }, picoElf());
    await app.idle();
    const full = await getJob(app, alice.token, job.job_id);
    const fullText = (full.uart as { text: string }).text;
    const read = async (query: string) => (await app.request(`/api/v1/jobs/${job.job_id}?${query}`, { headers: bearer(alice.token) })).json() as Promise<{ uart: Record<string, unknown> }>;

    const text = await read('uart=text');
    expect(Object.keys(text.uart).sort()).toEqual(['bytes', 'clock', 'cut_chars', 'dropped_bytes', 'text', 'time_base']);
    expect(text.uart).toMatchObject({ text: fullText, cut_chars: 0 });

    const cut = await read('max_chars=10');
    expect(cut.uart.cut_chars).toBe(fullText.length - 10);
    expect(cut.uart.text).toBe(`${fullText.slice(0, 5)}\n[... ${fullText.length - 10} characters cut ...]\n${fullText.slice(-5)}`);

    const refused = await app.request(`/api/v1/jobs/${job.job_id}?uart=base64`, { headers: bearer(alice.token) });
    expect(refused.status).toBe(422);

    // A count of characters is a whole number, read as pydantic reads an int ("10.0" and "1_0" are 10).
    for (const whole of ['10.0', '1_0', '%2010%20']) expect((await read(`max_chars=${whole}`)).uart.cut_chars).toBe(fullText.length - 10);
    const tooMany = await app.request(`/api/v1/jobs/${job.job_id}?max_chars=99999999999999999999`, { headers: bearer(alice.token) });
    expect(((await tooMany.json()) as { detail: { type: string }[] }).detail.map((d) => d.type)).toEqual(['less_than_equal']);
    for (const notWhole of ['1.5', '1e1', 'inf']) {
      const answer = await app.request(`/api/v1/jobs/${job.job_id}?max_chars=${notWhole}`, { headers: bearer(alice.token) });
      expect([answer.status, await answer.json()]).toEqual([
        422,
        { detail: [{ type: 'int_parsing', loc: ['query', 'max_chars'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: notWhole }] },
      ]);
    }
  });
});
