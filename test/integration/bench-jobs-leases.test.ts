import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EM_AVR } from '../../core/elf.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { bearer, flash, getJob, type JobJson, picoElf, withFault } from './bench-job-requests.js';

/** Flash jobs and board leases over real HTTP on the mock backend: sessions, deadlines, queue limits, restarts. */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

const FLASH = 0x10000000;

describe('jobs and leases', () => {
  async function openSession(token: string, board: string) {
    const res = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { session_id: string }).session_id;
  }

  it("runs under the caller's session and refuses others' sessions, ended ones and other boards", async () => {
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const sid = await openSession(alice.token, 'pico');
    const ok = await flash(app, alice.token, { board: 'pico', session: sid }, picoElf());
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as JobJson).session_id).toBe(sid);

    const theirs = await flash(app, bob.token, { board: 'pico', session: sid }, picoElf());
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual({ detail: `session ${sid} not found` });

    const wrongBoard = await flash(app, alice.token, { board: 'uno', session: sid }, makeElf({ machine: EM_AVR, segments: [{ paddr: 0, data: new Uint8Array(8) }] }));
    expect(wrongBoard.status).toBe(409);
    expect(await wrongBoard.json()).toEqual({ detail: `session ${sid} holds board pico, not uno` });

    const noSession = await flash(app, bob.token, { board: 'pico' }, picoElf());
    expect(noSession.status).toBe(409);
    expect(((await noSession.json()) as { detail: string }).detail).toMatch(/^board pico is leased by agent "alice" until/);

    await app.request(`/api/v1/sessions/${sid}/end`, { method: 'POST', headers: bearer(alice.token) });
    const ended = await flash(app, alice.token, { board: 'pico', session: sid }, picoElf());
    expect(ended.status).toBe(409);
    expect(await ended.json()).toEqual({ detail: `session ${sid} is ended, not active: open a new session` });
  });

  it('holds the board for a job without a session while it runs; the deadline fails a hung job with timeout', async () => {
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const { job_id } = (await (await flash(app, alice.token, { board: 'pico' }, withFault('flash-hang'))).json()) as JobJson;
    await app.jobStarted(job_id);
    expect((await getJob(app, alice.token, job_id)).state).toBe('flashing');
    const boards = (await (await app.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string }> };
    expect(boards.boards.find((b) => b.id === 'pico')!.status).toBe('busy');
    const blocked = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(bob.token), body: new URLSearchParams({ board: 'pico' }) });
    expect(blocked.status).toBe(409);
    // Its expected end (issue 31): flashing since 0, an expected flash of 1 s, then 0.8 s of capture;
    // the detail names its deadline (below) from when it started flashing too.
    expect(blocked.headers.get('retry-after')).toBe('2');
    expect(await blocked.json()).toEqual({
      detail:
        'board pico is busy: agent "alice" leased it for a flash job, until that job finishes, expected in about 2 s (its capture window), ' +
        'at the latest 2026-01-01T00:01:13.200Z (its deadline) (retry_after_seconds=2)',
    });

    // Default deadline: 60 s flash + 0.8 s x 4 s + 10 s margin = 73.2 s.
    await app.fake.tickAsync(73_199);
    expect((await getJob(app, alice.token, job_id)).state).toBe('flashing');
    app.fake.tick(1);
    await app.idle();
    const failed = await getJob(app, alice.token, job_id);
    expect(failed.state).toBe('failed');
    expect(failed.failure!.kind).toBe('timeout');
    expect(failed.failure!.message).toMatch(/did not finish within 73200 ms .* waiting for mock to open and flash pico/);
    const after = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(bob.token), body: new URLSearchParams({ board: 'pico' }) });
    expect(after.status).toBe(200);
  });

  it('runs jobs of one session in order and refuses one over the queue limit with 429', async () => {
    await app.close();
    app = await startBenchTestApp({ limits: { maxQueuedJobsPerBoard: 1 } });
    const { token } = await app.register();
    const sid = await openSession(token, 'pico');
    const first = (await (await flash(app, token, { board: 'pico', session: sid }, withFault('run-hang'))).json()) as JobJson;
    await app.jobReaches(first.job_id, 'running');
    const second = (await (await flash(app, token, { board: 'pico', session: sid, uart_seconds: '0.3' }, picoElf())).json()) as JobJson;
    const third = await flash(app, token, { board: 'pico', session: sid }, picoElf());
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('5');
    expect(await third.json()).toEqual({ detail: 'board pico already has 1 jobs waiting (the limit is 1); retry after some finish' });
    expect((await getJob(app, token, first.job_id)).state).toBe('running');
    expect((await getJob(app, token, second.job_id)).state).toBe('queued');
    const board = ((await (await app.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; queued_jobs: number }> }).boards.find((b) => b.id === 'pico');
    expect(board!.queued_jobs).toBe(1);
  });

  it('fails jobs a restart interrupted and runs the queued ones after it', async () => {
    const { token } = await app.register();
    const finished = (await (await flash(app, token, { board: 'pico', uart_seconds: '0.1' }, picoElf())).json()) as JobJson;
    await app.idle();
    const before = await getJob(app, token, finished.job_id);
    const sid = await openSession(token, 'pico');
    const hung = (await (await flash(app, token, { board: 'pico', session: sid }, withFault('run-hang'))).json()) as JobJson;
    await app.jobReaches(hung.job_id, 'running');
    const waiting = (await (await flash(app, token, { board: 'pico', session: sid, uart_seconds: '0.3' }, picoElf())).json()) as JobJson;
    expect((await getJob(app, token, hung.job_id)).state).toBe('running');

    app = await app.restart();
    await app.idle();
    const interrupted = await getJob(app, token, hung.job_id);
    expect(interrupted).toMatchObject({
      state: 'failed',
      failure: { kind: 'interrupted', message: 'the bench service restarted while this job was running; submit it again' },
    });
    const rerun = await getJob(app, token, waiting.job_id);
    expect(rerun.state).toBe('done');
    expect((rerun.uart as { text: string }).text).toMatch(/tick 3\r\n$/);
    expect(app.logger.lines).toContain(`warn: job ${hung.job_id} on pico was interrupted by a restart`);
    // Finished jobs, their UART and the agent's token survive as they were.
    expect(await getJob(app, token, finished.job_id)).toEqual(before);
  });
});

describe('recovery', () => {
  it('fails a queued job whose stored firmware changed on disk while the server was down', async () => {
    const { token } = await app.register();
    const sid = ((await (await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico' }) })).json()) as { session_id: string }).session_id;
    const hung = (await (await flash(app, token, { board: 'pico', session: sid }, withFault('run-hang'))).json()) as JobJson;
    await app.jobReaches(hung.job_id, 'running');
    const elf = picoElf();
    const queued = (await (await flash(app, token, { board: 'pico', session: sid }, elf)).json()) as JobJson;
    await app.close();
    writeFileSync(path.join(app.dataDir, 'firmware', firmwareImage(elf).sha256), makeElf({ entry: 0x10000001, segments: [{ paddr: FLASH, data: new Uint8Array(4) }] }));
    app = await app.restart();
    await app.idle();
    const job = await getJob(app, token, queued.job_id);
    expect(job.state).toBe('failed');
    expect(job.failure).toEqual({
      kind: 'internal',
      message: expect.stringMatching(/^the stored firmware of this job is corrupted \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\)$/),
    });
  });
});
