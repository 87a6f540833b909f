import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';
import { ClockedUartBackend } from './clocked-uart-backend.js';

/**
 * A job states which clock its device ran on (issue 12, "Time"): a QEMU board whose board file asks
 * for -icount runs on instruction counting, and its job says so in `uart.clock`, also after a
 * restart (the statement is stored with the UART). Devices that state nothing answer null.
 */

let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function runOneJob(clockSource: string | undefined): Promise<{ uart: { clock: string | null; time_base: string } | null; state: string }> {
  app = await startBenchTestApp({ backends: ({ clock }) => ({ mock: new ClockedUartBackend(clock, clockSource) }) });
  const alice = await app.register('alice');
  const auth = { authorization: `Bearer ${alice.token}` };
  const body = new FormData();
  body.set('board', 'pico');
  body.set('uart_seconds', '1');
  body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
  const flashed = await app.request('/api/v1/jobs/flash', { method: 'POST', headers: auth, body });
  expect(flashed.status).toBe(200);
  const { job_id: jobId } = (await flashed.json()) as { job_id: string };
  await app.jobReaches(jobId, 'running');
  for (let i = 0; i < 20; i++) await app.fake.tickAsync(100);
  await app.idle();
  const res = await app.request(`/api/v1/jobs/${jobId}`, { headers: auth });
  expect(res.status).toBe(200);
  return (await res.json()) as { uart: { clock: string | null; time_base: string } | null; state: string };
}

describe('a job states its clock', () => {
  it('is the clock the device states (QEMU with -icount)', async () => {
    const job = await runOneJob('icount shift=7 (128 ns per instruction)');
    expect(job.state).toBe('done');
    expect(job.uart).toMatchObject({ time_base: 'wall', clock: 'icount shift=7 (128 ns per instruction)' });
  });

  it('is null when the device states none', async () => {
    const job = await runOneJob(undefined);
    expect(job.state).toBe('done');
    expect(job.uart!.clock).toBeNull();
  });
});
