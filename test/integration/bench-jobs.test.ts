import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EM_AVR } from '../../core/elf.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { firmwareImage, makeElf, picoTestElf } from '../support/make-elf.js';

/**
 * Flash jobs over real HTTP on the mock backend: uploads, validation, failures, transcripts.
 * Leases and restarts: bench-jobs-leases.test.ts; upload limits: bench-upload-limits.test.ts.
 */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

const FLASH = 0x10000000;
const picoElf = (sections: Array<{ name: string; data: Uint8Array }> = []) => picoTestElf({ sections });
const withFault = (fault: string) => picoTestElf({ fault });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

interface JobJson {
  job_id: string;
  state: string;
  session_id: string | null;
  uart: { text: string; base64: string; bytes: number; dropped_bytes: number; time_base: string; chunks: Array<{ at_seconds: number; text: string }>; chunks_omitted: number } | null;
  stop: Record<string, unknown> | null;
  failure: { kind: string; message: string } | null;
  [key: string]: unknown;
}

async function flash(token: string, fields: Record<string, string>, elf?: Uint8Array, filename = 'fw.elf') {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  if (elf) body.set('firmware', new Blob([elf], { type: 'application/octet-stream' }), filename);
  return app.request('/api/v1/jobs/flash', { method: 'POST', headers: bearer(token), body });
}

async function getJob(token: string, jobId: string): Promise<JobJson> {
  const res = await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await res.json()) as JobJson;
}

const firmwareFiles = () => readdirSync(path.join(app.dataDir, 'firmware'));

describe('POST /api/v1/jobs/flash', () => {
  it('runs a job on the mock to done with the documented transcript', async () => {
    const { token } = await app.register('alice');
    const elf = picoElf();
    const image = firmwareImage(elf);
    const res = await flash(token, { board: 'pico' }, elf);
    expect(res.status).toBe(200);
    const queued = (await res.json()) as JobJson;
    expect(queued).toMatchObject({
      board: 'pico',
      session_id: null,
      state: 'queued',
      uart_seconds: 0.8,
      uart: null,
      stop: null,
      failure: null,
      created_at: '2026-01-01T00:00:00.000Z',
      started_at: null,
      finished_at: null,
      firmware: {
        sha256: image.sha256,
        size_bytes: elf.length,
        elf: { machine: 40, machine_name: 'ARM (40)', entry: FLASH + 9, segments: [{ paddr: FLASH, vaddr: FLASH, file_size: 64, mem_size: 64 }] },
      },
    });
    expect(queued.job_id).toMatch(/^job_[A-Za-z0-9_-]{22}$/);

    await app.idle();
    const done = await getJob(token, queued.job_id);
    const lines = [
      'hilbench-mock: reset pico\r\n',
      `hilbench-mock: image sha256=${image.sha256} entry=0x${(FLASH + 9).toString(16)} segments=1\r\n`,
      ...Array.from({ length: 8 }, (_, i) => `hilbench-mock: tick ${i + 1}\r\n`),
    ];
    expect(done).toMatchObject({
      state: 'done',
      failure: null,
      stop: { reason: 'elapsed', elapsed_seconds: 0.8 },
      started_at: '2026-01-01T00:00:00.000Z',
      finished_at: '2026-01-01T00:00:00.000Z',
      timings_ms: { queued: 0, flash: 0, run: 0 },
    });
    expect(done.uart!.text).toBe(lines.join(''));
    expect(Buffer.from(done.uart!.base64, 'base64').toString('utf8')).toBe(lines.join(''));
    expect(done.uart).toMatchObject({ bytes: Buffer.byteLength(lines.join('')), dropped_bytes: 0, time_base: 'simulated', chunks_omitted: 0 });
    expect(done.uart!.chunks.map((c) => c.at_seconds)).toEqual([0, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]);
    expect(done.uart!.chunks[2]!.text).toBe('hilbench-mock: tick 1\r\n');
    expect(firmwareFiles()).toEqual([image.sha256]);

    // The job's own lease ended with the job.
    const boards = (await (await app.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string }> };
    expect(boards.boards.find((b) => b.id === 'pico')!.status).toBe('free');
  });

  it('fails a job whose flash fails, with the kind, the message, exit code and tool output', async () => {
    const { token } = await app.register();
    const res = await flash(token, { board: 'pico', uart_seconds: '0.2' }, withFault('flash-fail'));
    const { job_id } = (await res.json()) as JobJson;
    await app.idle();
    const job = await getJob(token, job_id);
    expect(job).toMatchObject({
      state: 'failed',
      uart: null,
      stop: null,
      failure: { kind: 'flash-failed', message: 'mock flash failed (injected fault flash-fail); exit code 1; output: ** Programming Failed ** (mock)' },
    });
    expect(job.finished_at).toBe('2026-01-01T00:00:00.000Z');
  });

  it('reports a firmware exit and a crash as the stop reason of a done job', async () => {
    const { token } = await app.register();
    const exit = (await (await flash(token, { board: 'pico' }, withFault('exit'))).json()) as JobJson;
    await app.idle();
    expect((await getJob(token, exit.job_id)).stop).toEqual({ reason: 'exited', exit_code: 3, elapsed_seconds: 0 });
    const crash = (await (await flash(token, { board: 'pico' }, withFault('crash'))).json()) as JobJson;
    await app.idle();
    expect((await getJob(token, crash.job_id)).stop).toEqual({ reason: 'crashed', message: 'mock core locked up (injected fault crash)', elapsed_seconds: 0 });
  });

  it('replaces invalid UTF-8 in text and keeps the exact bytes in base64', async () => {
    const { token } = await app.register();
    const { job_id } = (await (await flash(token, { board: 'pico', uart_seconds: '0.1' }, withFault('garble'))).json()) as JobJson;
    await app.idle();
    const job = await getJob(token, job_id);
    const raw = Buffer.from(job.uart!.base64, 'base64');
    expect(raw.length).toBe(job.uart!.bytes);
    expect(job.uart!.text).toContain('\ufffd');
    expect(job.uart!.text).toBe(new TextDecoder().decode(raw));
    expect(job.uart!.chunks.map((c) => c.text).join('')).toBe(job.uart!.text);
  });

  it('validates every field, in order, before anything is stored', async () => {
    const { token } = await app.register();
    const res = await flash(token, { uart_seconds: 'soon' });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'board'], msg: 'Field required', input: null },
        { type: 'missing', loc: ['body', 'firmware'], msg: 'Field required', input: null },
        { type: 'float_parsing', loc: ['body', 'uart_seconds'], msg: 'Input should be a valid number, unable to parse string as a number', input: 'soon' },
      ],
    });
    expect(firmwareFiles()).toEqual([]);
  });

  it.each([
    ['0', { type: 'greater_than', loc: ['body', 'uart_seconds'], msg: 'Input should be greater than 0', input: '0', ctx: { gt: 0 } }],
    ['30.01', { type: 'less_than_equal', loc: ['body', 'uart_seconds'], msg: 'Input should be less than or equal to 30', input: '30.01', ctx: { le: 30 } }],
  ])('bounds uart_seconds=%s', async (value, error) => {
    const { token } = await app.register();
    const res = await flash(token, { board: 'pico', uart_seconds: value }, picoElf());
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: [error] });
  });

  it('refuses firmware sent as a text field', async () => {
    const { token } = await app.register();
    const res = await flash(token, { board: 'pico', firmware: 'not a file' });
    expect(await res.json()).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'firmware'], msg: "Value error, Expected UploadFile, received: <class 'str'>", input: 'not a file', ctx: { error: {} } }],
    });
  });

  it('answers a missing body with one 422 per required field (as FastAPI) and a non-multipart body with 415', async () => {
    const { token } = await app.register();
    const none = await app.request('/api/v1/jobs/flash', { method: 'POST', headers: bearer(token) });
    expect(none.status).toBe(422);
    expect(await none.json()).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'board'], msg: 'Field required', input: null },
        { type: 'missing', loc: ['body', 'firmware'], msg: 'Field required', input: null },
      ],
    });
    const json = await app.request('/api/v1/jobs/flash', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{}' });
    expect(json.status).toBe(415);
  });

  it.each([
    ['not an ELF', new TextEncoder().encode('#!/bin/sh\necho hi\n'.repeat(4)), /^Value error, not a loadable ELF: not an ELF file: missing the \\x7fELF magic/],
    ['the wrong architecture', makeElf({ machine: EM_AVR, segments: [{ paddr: 0, data: new Uint8Array(8) }] }), /^Value error, cannot run on pico: ELF machine AVR \(83\) does not match pico's architecture arm/],
    ['outside the memory map', makeElf({ segments: [{ paddr: 0x30000000, data: new Uint8Array(8) }] }), /^Value error, cannot run on pico: segment 0 loads at 0x30000000\.\.0x30000008/],
  ])('refuses firmware that is %s with a 422 on firmware, storing nothing', async (_what, bytes, msg) => {
    const { token } = await app.register();
    const res = await flash(token, { board: 'pico' }, bytes, 'bad.elf');
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<{ type: string; loc: string[]; msg: string; input: unknown }> };
    expect(body.detail).toHaveLength(1);
    expect(body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'firmware'], input: 'bad.elf' });
    expect(body.detail[0]!.msg).toMatch(msg);
    expect(firmwareFiles()).toEqual([]);
    expect((await app.server.service.store.counts()).jobsTotal).toBe(0);
  });

  it('answers 404 for an unknown board', async () => {
    const { token } = await app.register();
    const res = await flash(token, { board: 'zx81' }, picoElf());
    expect(res.status).toBe(404);
  });

  it('lets exactly one of many agents racing for a free board get a job on it', async () => {
    const agents = await Promise.all(Array.from({ length: 12 }, (_, i) => app.register(`racer-${i}`)));
    const results = await Promise.all(agents.map((a) => flash(a.token, { board: 'pico' }, withFault('run-hang'))));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(agents.length - 1);
    expect((await app.server.service.store.counts()).jobsTotal).toBe(1);
  });

  it("hides another agent's job as 404, exactly like a job that does not exist", async () => {
    const { token } = await app.register('carol');
    const missing = await app.request('/api/v1/jobs/job_doesnotexist', { headers: bearer(token) });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'job job_doesnotexist not found' });
  });

  it("hides another agent's job as 404", async () => {
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const { job_id } = (await (await flash(alice.token, { board: 'pico' }, picoElf())).json()) as JobJson;
    const res = await app.request(`/api/v1/jobs/${job_id}`, { headers: bearer(bob.token) });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: `job ${job_id} not found` });
  });
});
