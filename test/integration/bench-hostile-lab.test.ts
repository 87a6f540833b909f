import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import type { BenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';
import { bearer, flash } from './bench-job-requests.js';
import { ADMIN, asWorker, cleanups, createWorker, PICO, queuedJob, runningJob, savedUartText, startLab, sweptUntilFailed, uartReport } from './hostile-lab-kit.js';

/**
 * A hostile (or merely unlucky) bench worker against the lab's surfaces, on both stores: calls in an
 * order no honest worker makes, across a server restart, late or twice, revoked, vanished, by the
 * thousand, and with the database failing a look. Each is answered as documented
 * (docs/worker-protocol.md), never a 500, and nothing accepted is lost or held for good. What a
 * worker reports (jobs not its own, UART too big, out of order, bad base64):
 * bench-hostile-lab-reports.test.ts.
 */

describe.each(['sqlite', 'postgres'] as const)('a hostile bench worker (%s store)', (store) => {
  it("fails a job whose worker vanished after renewing its claim through a restarted server (the renewal used to make the claim never lapse)", async () => {
    let app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    app = await app.restart();
    cleanups.push(() => app.close());
    // The worker goes on talking to the restarted server, which has no memory of handing out the job.
    expect(await (await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/heartbeat`, {})).json()).toEqual({ stop: null });
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(0, 'booted\n'))).status).toBe(200);
    // Then it loses power: past its claim (30 s) and a sweep (every 5 s), the job fails as interrupted.
    await sweptUntilFailed(app, jobId, { maxFakeMs: 120_000 });
    const job = (await app.server.service.store.getJob(jobId))!;
    expect([job.failure?.kind, job.failure?.message]).toEqual(['interrupted', expect.stringContaining('its claim lapsed')]);
    expect(new TextDecoder().decode(job.uart?.bytes)).toBe('booted\n');
  });
});

describe.each(['sqlite', 'postgres'] as const)('a running job taken up by a restarted server (%s store)', (store) => {
  it('keeps every byte saved before the restart, also past the chunk boundaries the record lists', async () => {
    let app = await startLab(store, { limits: { maxUartChunksPerJob: 4 } });
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i}\n`);
    const report = { offset: 0, time_base: 'wall', dropped_bytes: 0, chunks: lines.map((line, i) => ({ at_ns: i, base64: Buffer.from(line).toString('base64') })) };
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, report)).status).toBe(200);
    app = await app.restart(); // closing saves the UART: 10 chunks, 4 of them listed
    cleanups.push(() => app.close());
    const before = (await app.server.service.store.getJob(jobId))!.uart!;
    expect([new TextDecoder().decode(before.bytes), before.chunks.length, before.chunksOmitted]).toEqual([lines.join(''), 4, 6]);
    // The worker goes on where it was; the restarted server takes the job up from the store and saves it a second later.
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(before.bytes.length, 'after\n'))).status).toBe(200);
    app.fake.tick(1_000);
    expect(await savedUartText(app, jobId, (text) => text.endsWith('after\n'))).toBe(`${lines.join('')}after\n`);
  });
});

describe.each(['sqlite', 'postgres'] as const)('a revoked bench worker (%s store)', (store) => {
  it('takes no job with a claim it was already waiting in when revoked; the job waits for a worker still trusted', async () => {
    const app = await startLab(store);
    const revoked = await createWorker(app, 'pi-1');
    const trusted = await createWorker(app, 'pi-2');
    for (const worker of [revoked, trusted]) expect((await asWorker(app, worker.token, '/api/v1/worker/announce', { boards: [PICO] })).status).toBe(200);
    app.fake.tick(5_000);
    const timersBefore = app.fake.countTimers();
    const waiting = asWorker(app, revoked.token, '/api/v1/worker/claim', { boards: ['pico'], wait_seconds: 20 });
    // The claim is waiting once it set its 20 s timer on the server's clock.
    await waitUntil(systemClock, () => (app.fake.countTimers() > timersBefore ? true : undefined), { timeoutMs: 20_000, pollMs: 2, describe: 'the claim to wait' });
    expect((await app.request(`/admin/workers/${revoked.workerId}/revoke`, { method: 'POST', headers: { 'x-admin-token': ADMIN } })).status).toBe(200);
    const { token: agent } = await app.register('alice');
    const submitted = await flash(app, agent, { board: 'pico', uart_seconds: '5' }, picoTestElf());
    expect(submitted.status, await submitted.clone().text()).toBe(200);
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    app.fake.tick(20_000);
    expect(await (await waiting).json()).toEqual({ health_check: null, job: null });
    expect((await app.server.service.store.getJob(jobId))!.state).toBe('queued');
    const claimed = (await (await asWorker(app, trusted.token, '/api/v1/worker/claim', { boards: ['pico'], wait_seconds: 0 })).json()) as { job: { job_id: string } | null };
    expect(claimed.job?.job_id).toBe(jobId);
  });
});

describe.each(['sqlite', 'postgres'] as const)('a NUL in form fields the store looks up or keeps (%s store)', (store) => {
  it("answers a flash job naming a session with a NUL 404, like any session that is not the caller's", async () => {
    const app = await startLab(store, { localWorker: undefined });
    const { token } = await app.register('alice');
    const res = await flash(app, token, { board: 'pico', session: 'ses_\u0000' }, picoTestElf());
    expect([res.status, await res.json()]).toEqual([404, { detail: 'session ses_\u0000 not found' }]);
    // Nothing was queued: the board takes a job of another agent at once.
    const bob = await app.register('bob');
    expect((await flash(app, bob.token, { board: 'pico' }, picoTestElf())).status).toBe(200);
  });

  it("refuses a waitlist note with a NUL or another control character (422, nothing stored); tabs and line breaks stay", async () => {
    const app = await startLab(store);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await app.request('/')).text())![1]!;
    const join = (email: string, note: string) => app.request('/api/v1/waitlist', { method: 'POST', body: new URLSearchParams({ kind: 'person', email, note, csrf }) });
    for (const note of ['hi\u0000', 'bell\u0007', 'c1\u0085']) {
      const res = await join('a@example.org', note);
      expect(res.status, note).toBe(422);
      expect(((await res.json()) as { detail: Array<{ type: string; loc: unknown[] }> }).detail.map((d) => [d.type, d.loc])).toEqual([['string_pattern_mismatch', ['body', 'note']]]);
    }
    expect((await join('b@example.org', 'boards:\tpico\r\nand uno')).status).toBe(200);
    expect((await app.server.service.store.waitlist.list({ limit: 10 })).map((e) => [e.email, e.note])).toEqual([['b@example.org', 'boards:\tpico\r\nand uno']]);
  });
});

describe.each(['sqlite', 'postgres'] as const)('a job outcome that comes late or twice (%s store)', (store) => {
  const done = { outcome: { state: 'done', uart: { time_base: 'wall', dropped_bytes: 0, chunks: [] }, stop: { reason: 'elapsed', elapsed_ns: 1 }, flash_ms: 1, run_ms: 1 } };

  it('refuses (409, naming how the job ended) an outcome for a job the sweep failed meanwhile, and keeps the first', async () => {
    const app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    await sweptUntilFailed(app, jobId, { maxFakeMs: 120_000 });
    const late = await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, done);
    expect(late.status).toBe(409);
    expect(((await late.json()) as { detail: string }).detail).toMatch(new RegExp(`^job ${jobId} is failed \\(interrupted: .*its claim lapsed.*\\): this outcome came too late, the first one stands$`));
    expect((await app.server.service.store.getJob(jobId))!.failure?.kind).toBe('interrupted');
  });

  it('answers the same outcome sent again (its answer lost) as the first', async () => {
    const app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    for (let i = 0; i < 2; i++) {
      const res = await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, done);
      expect([i, res.status, await res.json()]).toEqual([i, 200, { job_id: jobId, state: 'done' }]);
    }
  });
});

describe.each(['sqlite', 'postgres'] as const)('a failure reported without a capture (%s store)', (store) => {
  const failed = { outcome: { state: 'failed', failure: { kind: 'internal', message: 'worker lost its capture' }, uart: null } };
  const uartText = async (app: BenchTestApp, agent: string, jobId: string) =>
    ((await (await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(agent) })).json()) as { uart: { text: string } | null }).uart?.text;

  it('keeps the UART the job reported, not saved yet', async () => {
    const app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    const { jobId, agent } = await runningJob(app, token);
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(0, 'booted\n'))).status).toBe(200);
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, failed)).status).toBe(200);
    expect(await uartText(app, agent, jobId)).toBe('booted\n');
  });

  it('keeps the UART saved before a restart', async () => {
    let app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    const { jobId, agent } = await runningJob(app, token);
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(0, 'booted\n'))).status).toBe(200);
    app = await app.restart();
    cleanups.push(() => app.close());
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, failed)).status).toBe(200);
    expect(await uartText(app, agent, jobId)).toBe('booted\n');
  });
});

describe.each(['sqlite', 'postgres'] as const)('a job whose worker vanished (%s store)', (store) => {
  it('is forgotten by the server once the sweep failed it: its session expires with its board free, not with jobs still stopping', async () => {
    const app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    expect((await asWorker(app, token, '/api/v1/worker/announce', { boards: [PICO] })).status).toBe(200);
    app.fake.tick(5_000);
    const { token: agent } = await app.register('alice');
    const opened = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(agent), body: new URLSearchParams({ board: 'pico', idle_seconds: '60' }) });
    const { session_id: sessionId } = (await opened.json()) as { session_id: string };
    const submitted = await flash(app, agent, { board: 'pico', session: sessionId }, picoTestElf());
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    expect(((await (await asWorker(app, token, '/api/v1/worker/claim', { boards: ['pico'], wait_seconds: 0 })).json()) as { job: { job_id: string } }).job.job_id).toBe(jobId);
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(0, 'booted\n'))).status).toBe(200);
    // The worker loses power; its claim lapses, the sweep fails the job, and the session runs out 60 s later.
    await sweptUntilFailed(app, jobId, { maxFakeMs: 120_000 });
    let seen = '';
    await waitUntil(
      systemClock,
      () => {
        app.fake.tick(1_000);
        seen = app.logger.lines.filter((l) => l.includes(`session ${sessionId}`)).join(' | ');
        return seen.includes('expired') ? seen : undefined;
      },
      { timeoutMs: 20_000, pollMs: 5, describe: `session ${sessionId} to expire`, lastSeen: () => seen || 'no log line' },
    );
    expect(seen).toContain(`session ${sessionId} on pico expired; the board is free`);
  });
});

describe('a worker opening long polls by the thousand (decision 0470)', () => {
  it('waits in at most 4 claims and 2 serial-input fetches per job at once; more is a 429 with Retry-After, and a slot frees when a poll answers', async () => {
    const app = await startLab('sqlite');
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    expect((await asWorker(app, token, '/api/v1/worker/announce', { boards: [PICO, { ...PICO, board: 'uno', backend: 'sim' }], running_jobs: [jobId] })).status).toBe(200);
    const timersBefore = app.fake.countTimers();
    const claims = Array.from({ length: 4 }, () => asWorker(app, token, '/api/v1/worker/claim', { boards: ['uno'], wait_seconds: 20 }));
    const inputs = Array.from({ length: 2 }, () => asWorker(app, token, `/api/v1/worker/jobs/${jobId}/input`, { written_through: 0, wait_seconds: 20 }));
    // All six wait once each set its timer on the server's clock.
    await waitUntil(systemClock, () => (app.fake.countTimers() >= timersBefore + 6 ? true : undefined), { timeoutMs: 20_000, pollMs: 2, describe: 'six long polls to wait' });
    // Bounded: without the limit these two would wait their 20 s of a clock that does not move.
    const overLimit = (path: string, body: unknown) =>
      app
        .request(path, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) })
        .catch((err: unknown) => {
          throw new Error(`${path} was not refused but waited (no limit on long polls): ${String(err)}`);
        });
    const claim = await overLimit('/api/v1/worker/claim', { boards: ['uno'], wait_seconds: 20 });
    expect([claim.status, claim.headers.get('retry-after')]).toEqual([429, '1']);
    expect(((await claim.json()) as { detail: string }).detail).toMatch(/already waits in 4 claims/);
    const input = await overLimit(`/api/v1/worker/jobs/${jobId}/input`, { written_through: 0, wait_seconds: 20 });
    expect(input.status).toBe(429);
    app.fake.tick(20_000);
    for (const answer of [...claims, ...inputs]) expect((await answer).status).toBe(200);
    // The slots are free again: a claim waits (its timer set), and answers none when its wait ends.
    const timersNow = app.fake.countTimers();
    const again = asWorker(app, token, '/api/v1/worker/claim', { boards: ['uno'], wait_seconds: 1 });
    await waitUntil(systemClock, () => (app.fake.countTimers() > timersNow ? true : undefined), { timeoutMs: 20_000, pollMs: 2, describe: 'the claim to wait' });
    app.fake.tick(1_000);
    expect(await (await again).json()).toEqual({ health_check: null, job: null });
  });
});

describe('the database failing a look while an agent waits for a job', () => {
  /** Makes the store's next `times` job reads fail as a dropped database connection would. */
  function failJobReads(app: BenchTestApp, times: number): { failed: () => number } {
    const store = app.server.service.store;
    const real = store.getJob.bind(store);
    let left = times;
    store.getJob = async (jobId) => {
      if (left <= 0) return real(jobId);
      left--;
      throw new Error('Connection terminated unexpectedly');
    };
    return { failed: () => times - left };
  }

  it('goes on waiting (?wait= and the UART stream) and answers when the job ends; nothing is left unhandled to end the process', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(async () => void process.off('unhandledRejection', onUnhandled));
    const app = await startLab('sqlite');
    const { token } = await createWorker(app, 'pi');
    const { jobId, agent } = await queuedJob(app, token);
    const timersBefore = app.fake.countTimers();
    const waiting = app.request(`/api/v1/jobs/${jobId}?wait=30`, { headers: bearer(agent) });
    await waitUntil(systemClock, () => (app.fake.countTimers() >= timersBefore + 2 ? true : undefined), { timeoutMs: 20_000, pollMs: 2, describe: 'the ?wait= request to wait' });
    const stream = await app.request(`/api/v1/jobs/${jobId}/uart`, { headers: bearer(agent), signal: AbortSignal.timeout(20_000) });
    expect(stream.status).toBe(200);
    const reads = failJobReads(app, 3);
    // Three failed looks (the wait's and the stream's polls), each tried again a second later.
    await waitUntil(
      systemClock,
      () => {
        app.fake.tick(1_000);
        return reads.failed() >= 3 ? true : undefined;
      },
      { timeoutMs: 20_000, pollMs: 5, describe: 'three failed job reads' },
    );
    // The job runs and ends; both the waiting request and the stream hear of it.
    const claimed = (await (await asWorker(app, token, '/api/v1/worker/claim', { boards: ['pico'], wait_seconds: 0 })).json()) as { job: { job_id: string } };
    expect(claimed.job.job_id).toBe(jobId);
    const done = { outcome: { state: 'done', uart: { time_base: 'wall', dropped_bytes: 0, chunks: [] }, stop: { reason: 'elapsed', elapsed_ns: 1 }, flash_ms: 1, run_ms: 1 } };
    expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, done)).status).toBe(200);
    const answer = await waiting;
    expect([answer.status, ((await answer.json()) as { state: string }).state]).toEqual([200, 'done']);
    let events = '';
    const reader = stream.body!.getReader();
    while (!events.includes('event: end')) {
      const { value, done: over } = await reader.read();
      if (over) break;
      events += new TextDecoder().decode(value);
      app.fake.tick(1_000);
    }
    expect(events).toContain('event: end');
    expect(unhandled).toEqual([]);
  });
});
