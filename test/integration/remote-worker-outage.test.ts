import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createWorkerToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { getJob, picoElf, submit } from './bench-job-requests.js';
import { ClockedUartBackend, clockedTranscript } from './clocked-uart-backend.js';

/**
 * A worker that loses the server (issue 10): the job it runs ends while the lab server is down;
 * the worker keeps the outcome and delivers it once the server is back on its address (bounded by
 * the worker's delivery window, 10 min), and the job is done with all its UART, however long the
 * server was away within that window. Real HTTP on loopback, one fake clock for both sides.
 */

const ADMIN = 'admin-secret';
const CLAIM_SECONDS = 30;
let app: BenchTestApp | undefined;
const workers: LabWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
  app = undefined;
});

/** Advances the shared fake clock by `ms` a second at a time, giving the worker's failing requests real time. */
async function passWhileDown(fake: BenchTestApp['fake'], ms: number): Promise<void> {
  for (let passed = 0; passed < ms; passed += 1_000) {
    await fake.tickAsync(1_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('a remote worker whose server goes away while its job runs', () => {
  for (const downSeconds of [10, 100]) {
    it(`delivers the job's outcome when the server is back after ${downSeconds} s`, async () => {
      const first = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, workerTimings: { claimSeconds: CLAIM_SECONDS } });
      app = first;
      const port = Number(new URL(first.url).port);
      const { token } = await createWorkerToken(first.request, { adminToken: ADMIN, label: 'pi-outage' });
      const clock = clockFromFakeTimers(first.fake);
      workers.push(await startLabWorker({ serverUrl: first.url, token, clock, boards: ['pico'], backends: { mock: new ClockedUartBackend(clock) } }));
      await first.fake.tickAsync(5_000);
      const alice = await first.register('alice');
      const job = await submit(first, alice.token, { board: 'pico', uart_seconds: '2' }, picoElf());
      await first.jobReaches(job.job_id, 'running');

      // The server stops (as a crash would leave it: the job running in the store); the job ends
      // on the worker meanwhile and its outcome cannot be delivered.
      await first.close();
      app = undefined;
      await passWhileDown(first.fake, downSeconds * 1000);

      app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, workerTimings: { claimSeconds: CLAIM_SECONDS }, dataDir: first.dataDir, fake: first.fake, port });
      const again = app;
      let seen = 'not looked at yet';
      await waitUntil(
        systemClock,
        async () => {
          const state = (await again.server.service.store.getJob(job.job_id))?.state;
          seen = state ?? 'missing';
          return state === 'done' || state === 'failed' ? true : undefined;
        },
        {
          timeoutMs: 20_000,
          pollMs: 10,
          describe: `job ${job.job_id} to end after the server came back`,
          lastSeen: () => `state ${seen}`,
          pause: async (ms) => {
            await again.fake.tickAsync(1_000);
            await new Promise((resolve) => setTimeout(resolve, ms));
          },
        },
      );
      const ended = await getJob(again, alice.token, job.job_id);
      expect(ended).toMatchObject({ state: 'done', failure: null });
      expect((ended.uart as { text: string } | null)?.text).toBe(clockedTranscript(20));
    });
  }
});
