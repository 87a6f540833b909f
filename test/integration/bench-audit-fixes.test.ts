import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../../server/bench/bench-test-harness.js';
import { makeElf } from '../support/make-elf.js';

/** The bench-service audit findings (issue 2), one describe per finding, over real HTTP on the mock. */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

const FLASH = 0x10000000;
const picoElf = (sections: Array<{ name: string; data: Uint8Array }> = []) => makeElf({ segments: [{ paddr: FLASH, data: new Uint8Array(64) }], sections });
const withFault = (fault: string) => picoElf([{ name: '.hilbench.mock', data: new TextEncoder().encode(`fault=${fault}`) }]);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

interface JobJson {
  job_id: string;
  state: string;
  failure: { kind: string; message: string } | null;
  timings_ms: { queued: number | null; flash: number | null; run: number | null };
  [key: string]: unknown;
}

async function flash(token: string, fields: Record<string, string>, elf: Uint8Array) {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  body.set('firmware', new Blob([elf], { type: 'application/octet-stream' }), 'fw.elf');
  return app.request('/api/v1/jobs/flash', { method: 'POST', headers: bearer(token), body });
}

async function submit(token: string, fields: Record<string, string>, elf: Uint8Array): Promise<JobJson> {
  const res = await flash(token, fields, elf);
  expect(res.status).toBe(200);
  return (await res.json()) as JobJson;
}

async function getJob(token: string, jobId: string): Promise<JobJson> {
  const res = await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await res.json()) as JobJson;
}

/** Lets promise chains that the fake clock does not drive run. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

describe('finding 6: failed jobs keep the timings of the phases they reached', () => {
  it('a job timing out while flashing reports its flash time and no run time', async () => {
    const { token } = await app.register();
    const job = await submit(token, { board: 'pico' }, withFault('flash-hang'));
    await settle();
    app.fake.tick(2_000);
    await settle();
    // Default deadline: 60 s flash + 0.8 s x 4 s + 10 s margin = 73.2 s.
    app.fake.tick(71_200);
    await app.idle();
    const failed = await getJob(token, job.job_id);
    expect(failed.failure?.kind).toBe('timeout');
    expect(failed.timings_ms).toEqual({ queued: 0, flash: 73_200, run: null });
  });

  it('a job timing out while running reports both its flash and its run time', async () => {
    const { token } = await app.register();
    const job = await submit(token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    await settle();
    expect((await getJob(token, job.job_id)).state).toBe('running');
    // 60 s + 0.1 s x 4 s + 10 s = 70.4 s.
    app.fake.tick(70_400);
    await app.idle();
    const failed = await getJob(token, job.job_id);
    expect(failed.failure?.kind).toBe('timeout');
    expect(failed.timings_ms).toEqual({ queued: 0, flash: 0, run: 70_400 });
  });
});

describe('finding 2: a malformed percent-encoding in a path is the client\'s mistake', () => {
  it.each(['/api/v1/jobs/%ZZ', '/api/v1/sessions/%E0%A4%A/heartbeat'])('%s answers 404 Not Found and logs nothing', async (p) => {
    const { token } = await app.register();
    const method = p.endsWith('heartbeat') ? 'POST' : 'GET';
    const res = await app.request(p, { method, headers: bearer(token) });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
    expect(app.logger.lines.filter((l) => l.startsWith('error:'))).toEqual([]);
  });
});
