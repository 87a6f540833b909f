import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createWorkerToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { picoTestElf } from '../support/make-elf.js';
import { bearer, flash, getJob } from './bench-job-requests.js';
import { ClockedUartBackend } from './clocked-uart-backend.js';

/**
 * Serial input to a job on a remote bench worker (decision 0420), over real HTTP on loopback: the
 * agent's bytes are queued in the store, the worker fetches them over its outbound connection and
 * writes them to the device (the clocked board echoes them into the job's UART), in the order the
 * server numbered them; the agent hears whether they were written yet.
 */

const ADMIN = 'admin-secret';
let app: BenchTestApp;
const workers: LabWorker[] = [];

afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
});

async function labWithWorker(): Promise<void> {
  app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN });
  const { token } = await createWorkerToken(app.request, { adminToken: ADMIN, label: 'pi-serial' });
  const clock = clockFromFakeTimers(app.fake);
  workers.push(await startLabWorker({ serverUrl: app.url, token, clock, boards: ['pico'], backends: { mock: new ClockedUartBackend(clock) } }));
  app.fake.tick(5_000); // past the availability cache: the worker's board is free
}

const sendInput = (token: string, jobId: string, body: unknown) =>
  app.request(`/api/v1/jobs/${jobId}/uart`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('serial input to a job on a remote bench worker', () => {
  it('reaches the device through the worker, in the order the server numbered it, and the answer says it was written', async () => {
    await labWithWorker();
    const alice = await app.register('alice');
    const submitted = await flash(app, alice.token, { board: 'pico', uart_seconds: '1' }, picoTestElf());
    expect(submitted.status).toBe(200);
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    await app.jobReaches(jobId, 'running');

    const first = await sendInput(alice.token, jobId, { text: 'ping\n' });
    expect(first.status, await first.clone().text()).toBe(200);
    expect(await first.json()).toEqual({ job_id: jobId, accepted_bytes: 5, input_seq: 1, delivery: 'written', written_bytes: 5 });
    // Three at once: the store numbers them, and the device gets them in that order.
    const answers = await Promise.all(['a', 'b', 'c'].map(async (text) => ({ text, body: (await (await sendInput(alice.token, jobId, { text })).json()) as { input_seq: number } })));
    const bySeq = answers.sort((x, y) => x.body.input_seq - y.body.input_seq);
    expect(bySeq.map((a) => a.body.input_seq)).toEqual([2, 3, 4]);

    for (let i = 0; i < 10; i++) await app.fake.tickAsync(100);
    await app.jobReaches(jobId, 'done');
    const done = (await getJob(app, alice.token, jobId)) as unknown as { uart: { text: string } };
    expect(done.uart.text.replace(/line \d+\r\n/g, '')).toBe(`ping\n${bySeq.map((a) => a.text).join('')}`);
    const late = await sendInput(alice.token, jobId, { text: 'x' });
    expect(late.status).toBe(409);
    expect(await late.json()).toEqual({ detail: `job ${jobId} is done, not running: serial input reaches a running job only` });
  });

  it('answers 409 for a job still queued, and 404 for another agent’s job', async () => {
    await labWithWorker();
    const alice = await app.register('alice');
    const opened = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'pico' }) });
    const { session_id: session } = (await opened.json()) as { session_id: string };
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const submitted = await flash(app, alice.token, { board: 'pico', uart_seconds: '1', session }, picoTestElf());
      ids.push(((await submitted.json()) as { job_id: string }).job_id);
    }
    await app.jobReaches(ids[0]!, 'running');
    // The session's second job waits for the first.
    const queued = await sendInput(alice.token, ids[1]!, { text: 'early' });
    expect(queued.status).toBe(409);
    expect(await queued.json()).toEqual({ detail: `job ${ids[1]} is queued, not running: serial input reaches a running job only` });
    const bob = await app.register('bob');
    expect((await sendInput(bob.token, ids[0]!, { text: 'x' })).status).toBe(404);
  });
});
