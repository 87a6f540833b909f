import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { bearer } from './bench-job-requests.js';
import { asWorker, createWorker, PICO, runningJob, savedUartText, startLab, uartReport } from './hostile-lab-kit.js';

/**
 * What a hostile (or merely unlucky) bench worker reports, on both stores: calls for jobs that are
 * not its own, and UART reports bigger or stranger than the protocol allows. Each is answered as
 * documented (docs/worker-protocol.md), never a 500, and a job keeps exactly what it had.
 */

describe.each(['sqlite', 'postgres'] as const)('a bench worker naming jobs that are not its own (%s store)', (store) => {
  it("answers 404 for a job that does not exist or is another worker's, on every job call, and changes nothing", async () => {
    const app = await startLab(store);
    const mine = await createWorker(app, 'pi-1');
    const other = await createWorker(app, 'pi-2');
    expect((await asWorker(app, other.token, '/api/v1/worker/announce', { boards: [PICO] })).status).toBe(200);
    const { jobId, agent } = await runningJob(app, mine.token);
    const failed = { outcome: { state: 'failed', failure: { kind: 'flash-failed', message: 'not mine' }, uart: null } };
    const calls = (id: string, token: string): Array<[string, Promise<Response>]> => [
      ['running', asWorker(app, token, `/api/v1/worker/jobs/${id}/running`, {})],
      ['heartbeat', asWorker(app, token, `/api/v1/worker/jobs/${id}/heartbeat`, {})],
      ['uart', asWorker(app, token, `/api/v1/worker/jobs/${id}/uart`, uartReport(0, 'x'))],
      ['input', asWorker(app, token, `/api/v1/worker/jobs/${id}/input`, { written_through: 0, wait_seconds: 0 })],
      ['firmware', asWorker(app, token, `/api/v1/worker/jobs/${id}/firmware`)],
      ['finish', asWorker(app, token, `/api/v1/worker/jobs/${id}/finish`, failed)],
    ];
    for (const [id, token] of [
      ['job_AAAAAAAAAAAAAAAAAAAAAA', mine.token],
      [jobId, other.token],
    ] as const) {
      for (const [what, answer] of calls(id, token)) {
        const res = await answer;
        expect([what, id, res.status, await res.json()]).toEqual([what, id, 404, { detail: `job ${id} not found among this worker's jobs` }]);
      }
    }
    const job = (await (await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(agent) })).json()) as { state: string };
    expect(job.state).toBe('running');
    // The worker holding it still runs it.
    expect(await (await asWorker(app, mine.token, `/api/v1/worker/jobs/${jobId}/heartbeat`, {})).json()).toEqual({ stop: null });
  });
});

describe.each(['sqlite', 'postgres'] as const)('a bench worker sending more UART than its ticket allows (%s store)', (store) => {
  it('keeps at most maxUartBytesPerJob of a job, while it runs and at its end, and counts the rest as dropped', async () => {
    const app = await startLab(store, { limits: { maxUartBytesPerJob: 1_000 } });
    const { token } = await createWorker(app, 'pi');
    const { jobId, agent } = await runningJob(app, token);
    const stored = app.server.service.store;
    // 3 reports of 600 bytes: 1 800 bytes against a limit of 1 000 (the worker was told: max_uart_bytes).
    for (const offset of [0, 600, 1_200]) {
      const res = await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(offset, 'u'.repeat(600)));
      expect(res.status, await res.clone().text()).toBe(200);
    }
    app.fake.tick(1_000); // the save
    let seen = 'nothing';
    const saved = await waitUntil(
      systemClock,
      async () => {
        const uart = (await stored.getJob(jobId))?.uart;
        seen = uart ? `${uart.bytes.length} bytes, ${uart.droppedBytes} dropped` : 'no UART';
        return uart && uart.bytes.length + uart.droppedBytes === 1_800 ? uart : undefined;
      },
      { timeoutMs: 20_000, pollMs: 5, describe: 'the UART save', lastSeen: () => seen },
    );
    expect([saved.bytes.length, saved.droppedBytes]).toEqual([1_000, 800]);

    // The outcome carries a capture of 5 000 bytes (and 7 the worker's backend dropped itself).
    const capture = { time_base: 'wall', dropped_bytes: 7, chunks: [{ at_ns: 1, base64: Buffer.alloc(5_000, 0x41).toString('base64') }] };
    const finished = await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, {
      outcome: { state: 'done', uart: capture, stop: { reason: 'elapsed', elapsed_ns: 1 }, flash_ms: 1, run_ms: 1 },
    });
    expect(finished.status, await finished.clone().text()).toBe(200);
    const job = (await (await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(agent) })).json()) as { uart: { bytes: number; dropped_bytes: number } };
    expect([job.uart.bytes, job.uart.dropped_bytes]).toEqual([1_000, 4_007]);
  });
});

describe.each(['sqlite', 'postgres'] as const)('UART reports out of order (%s store)', (store) => {
  it('never places bytes at another offset: a report past the bytes received counts the gap as dropped, a late report of the gap is not put after newer bytes', async () => {
    const app = await startLab(store);
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    const send = async (offset: number, text: string) => expect((await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, uartReport(offset, text))).status).toBe(200);
    await send(0, 'first\n'); // bytes 0..6
    await send(16, 'third\n'); // bytes 6..16 never came
    await send(6, 'second...\n'); // they come late
    await send(22, 'fourth\n');
    app.fake.tick(1_000);
    expect(await savedUartText(app, jobId, (text) => text.endsWith('fourth\n'))).toBe('first\nthird\nfourth\n');
    expect((await app.server.service.store.getJob(jobId))!.uart!.droppedBytes).toBe(10);
  });
});

describe('base64 in a worker report that is not standard base64', () => {
  it('is a 422 naming the chunk, and the job keeps what it had (Node would decode "!!!!" as no bytes)', async () => {
    const app = await startLab('sqlite');
    const { token } = await createWorker(app, 'pi');
    const { jobId } = await runningJob(app, token);
    for (const base64 of ['!!!!', 'QQ', 'QUJD\n']) {
      const report = { offset: 0, time_base: 'wall', dropped_bytes: 0, chunks: [{ at_ns: 0, base64: 'QUJD' }, { at_ns: 1, base64 }] };
      const res = await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/uart`, report);
      expect([base64, res.status]).toEqual([base64, 422]);
      expect(((await res.json()) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(['body', 'chunks', 1, 'base64']);
      const finish = await asWorker(app, token, `/api/v1/worker/jobs/${jobId}/finish`, { outcome: { state: 'failed', failure: { kind: 'internal', message: 'x' }, uart: { ...report, offset: undefined } } });
      expect([base64, finish.status]).toEqual([base64, 422]);
    }
    const job = (await app.server.service.store.getJob(jobId))!;
    expect([job.state, job.uart]).toEqual(['running', null]);
  });
});
