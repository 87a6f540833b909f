import { expect } from 'vitest';
import type { BenchTestApp } from '../support/bench-test-app.js';
import { picoTestElf } from '../support/make-elf.js';

/** Flash-job requests over real HTTP, shared by the bench tests on leases, jobs and timings. */

export const picoElf = (sections: Array<{ name: string; data: Uint8Array }> = []) => picoTestElf({ sections });
export const withFault = (fault: string) => picoTestElf({ fault });
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export interface JobJson {
  job_id: string;
  state: string;
  failure: { kind: string; message: string } | null;
  timings_ms: { queued: number | null; flash: number | null; run: number | null };
  [key: string]: unknown;
}

/** POST /api/v1/jobs/flash with `fields` and `elf` as the firmware part; the raw response. */
export async function flash(app: BenchTestApp, token: string, fields: Record<string, string>, elf: Uint8Array) {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  body.set('firmware', new Blob([elf], { type: 'application/octet-stream' }), 'fw.elf');
  return app.request('/api/v1/jobs/flash', { method: 'POST', headers: bearer(token), body });
}

/** Submits a flash job that must be accepted (200) and returns its JSON. */
export async function submit(app: BenchTestApp, token: string, fields: Record<string, string>, elf: Uint8Array): Promise<JobJson> {
  const res = await flash(app, token, fields, elf);
  expect(res.status).toBe(200);
  return (await res.json()) as JobJson;
}

export async function getJob(app: BenchTestApp, token: string, jobId: string): Promise<JobJson> {
  const res = await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await res.json()) as JobJson;
}
