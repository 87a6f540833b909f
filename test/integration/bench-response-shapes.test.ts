import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  adminSchema,
  agentRegistrationSchema,
  boardListSchema,
  healthSchema,
  jobSchema,
  sessionSchema,
  statsSchema,
} from '../../wire/bench/bench-schemas.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { makeElf } from '../support/make-elf.js';

/**
 * Every answer has exactly the documented shape: parsing with the schema `/openapi.json` is
 * generated from must succeed and give the same value back (zod drops unknown keys, so an
 * undocumented field fails the equality).
 */
let app: BenchTestApp;
const bodies: Record<string, unknown> = {};

beforeAll(async () => {
  app = await startBenchTestApp({ adminToken: 'admin' });
  const get = async (p: string, headers: Record<string, string> = {}) => (await app.request(p, { headers })).json();
  const reg = (await (await app.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'shape' }) })).json()) as { token: string };
  bodies.register = reg;
  const auth = { authorization: `Bearer ${reg.token}` };
  const session = (await (await app.request('/api/v1/sessions', { method: 'POST', headers: auth, body: new URLSearchParams({ board: 'pico' }) })).json()) as { session_id: string };
  bodies.session = session;
  bodies.heartbeat = await (await app.request(`/api/v1/sessions/${session.session_id}/heartbeat`, { method: 'POST', headers: auth })).json();
  const form = new FormData();
  form.set('board', 'pico');
  form.set('session', session.session_id);
  form.set('firmware', new Blob([makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(8) }] })]), 'fw.elf');
  const queued = (await (await app.request('/api/v1/jobs/flash', { method: 'POST', headers: auth, body: form })).json()) as { job_id: string };
  bodies.queuedJob = queued;
  await app.idle();
  bodies.doneJob = await get(`/api/v1/jobs/${queued.job_id}`, auth);
  const failing = new FormData();
  failing.set('board', 'pico');
  failing.set('session', session.session_id);
  failing.set('firmware', new Blob([makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(8) }], sections: [{ name: '.hilbench.mock', data: new TextEncoder().encode('fault=flash-fail') }] })]), 'f.elf');
  const failed = (await (await app.request('/api/v1/jobs/flash', { method: 'POST', headers: auth, body: failing })).json()) as { job_id: string };
  await app.idle();
  bodies.failedJob = await get(`/api/v1/jobs/${failed.job_id}`, auth);
  bodies.boards = await get('/api/v1/boards');
  bodies.health = await get('/api/v1/health');
  bodies.stats = await get('/api/v1/stats');
  bodies.admin = await get('/admin', { 'x-admin-token': 'admin' });
  bodies.ended = await (await app.request(`/api/v1/sessions/${session.session_id}/end`, { method: 'POST', headers: auth })).json();
});
afterAll(async () => {
  await app.close();
});

const cases: Array<[string, z.ZodType]> = [
  ['register', agentRegistrationSchema],
  ['session', sessionSchema],
  ['heartbeat', sessionSchema],
  ['ended', sessionSchema],
  ['queuedJob', jobSchema],
  ['doneJob', jobSchema],
  ['failedJob', jobSchema],
  ['boards', boardListSchema],
  ['health', healthSchema],
  ['stats', statsSchema],
  ['admin', adminSchema],
];

describe('response shapes', () => {
  it.each(cases)('%s matches its documented schema exactly', (name, schema) => {
    const body = bodies[name];
    expect(body).toBeDefined();
    expect(schema.parse(body)).toEqual(body);
  });
});
