import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { type Clock, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type FirmwareEntry, type FirmwareProgram, firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { boardListSchema, type BoardBody, healthSchema, type HealthBody, jobSchema, type JobBody } from '../../wire/bench/bench-schemas.js';

/**
 * A small client of the bench JSON API for the end-to-end tests (every-board-*, offline-*):
 * every answer is parsed with the server's own zod schemas, so a field that drifts from
 * docs/bench-api.md fails here with the path of the field, not later as `undefined`.
 */

/** An error answer: the status and the `{"detail"}` body the one error handler writes. */
export interface ErrorAnswer {
  status: number;
  detail: unknown;
  headers: Headers;
}

const detailSchema = z.object({ detail: z.unknown() });

async function parsed<T>(res: Response, schema: z.ZodType<T>, what: string): Promise<T> {
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${what}: expected 200, got ${res.status}: ${text.slice(0, 500)}`);
  const result = schema.safeParse(JSON.parse(text));
  if (!result.success) throw new Error(`${what}: answer does not match its schema: ${z.prettifyError(result.error)}\n${text.slice(0, 500)}`);
  return result.data;
}

async function errorAnswer(res: Response, what: string): Promise<ErrorAnswer> {
  const text = await res.text();
  if (res.status < 400) throw new Error(`${what}: expected an error status, got ${res.status}: ${text.slice(0, 500)}`);
  const body = detailSchema.safeParse(JSON.parse(text));
  if (!body.success) throw new Error(`${what}: error body is not {"detail": ...}: ${text.slice(0, 500)}`);
  return { status: res.status, detail: body.data.detail, headers: res.headers };
}

export interface BenchClient {
  boards(): Promise<BoardBody[]>;
  health(): Promise<HealthBody>;
  /** The HTML of a page (`/`, `/stats`). */
  page(pathname: string): Promise<string>;
  register(label: string): Promise<string>;
  /** `POST /api/v1/jobs/flash`; the queued job, or throws with the answer. */
  flash(token: string, fields: { board: string; uartSeconds: number; session?: string }, elf: Uint8Array): Promise<JobBody>;
  /** `POST /api/v1/jobs/flash` expected to be refused: the status and detail. */
  flashRefused(token: string, fields: { board: string; uartSeconds: number }, elf: Uint8Array): Promise<ErrorAnswer>;
  /** `POST /api/v1/sessions` expected to be refused. */
  openSessionRefused(token: string, board: string): Promise<ErrorAnswer>;
  openSession(token: string, board: string): Promise<string>;
  endSession(token: string, sessionId: string): Promise<void>;
  job(token: string, jobId: string): Promise<JobBody>;
  /** Polls the job until it is `done` or `failed`; bounded, and the failure shows the last record. */
  settled(token: string, jobId: string, options: { timeoutMs: number; clock?: Clock }): Promise<JobBody>;
}

export function benchClient(baseUrl: string): BenchClient {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const flashBody = (fields: { board: string; uartSeconds: number; session?: string }, elf: Uint8Array) => {
    const body = new FormData();
    body.set('board', fields.board);
    body.set('uart_seconds', String(fields.uartSeconds));
    if (fields.session) body.set('session', fields.session);
    body.set('firmware', new Blob([new Uint8Array(elf)], { type: 'application/octet-stream' }), `${fields.board}.elf`);
    return body;
  };
  const client: BenchClient = {
    boards: async () => (await parsed(await fetch(`${baseUrl}/api/v1/boards`), boardListSchema, 'GET /api/v1/boards')).boards,
    health: async () => parsed(await fetch(`${baseUrl}/api/v1/health`), healthSchema, 'GET /api/v1/health'),
    page: async (pathname) => {
      const res = await fetch(`${baseUrl}${pathname}`);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`GET ${pathname}: expected 200, got ${res.status}: ${text.slice(0, 500)}`);
      return text;
    },
    register: async (label) => {
      const res = await fetch(`${baseUrl}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label }) });
      return (await parsed(res, z.object({ token: z.string() }), 'POST /api/v1/agents/register')).token;
    },
    flash: async (token, fields, elf) => {
      const res = await fetch(`${baseUrl}/api/v1/jobs/flash`, { method: 'POST', headers: bearer(token), body: flashBody(fields, elf) });
      return parsed(res, jobSchema, `POST /api/v1/jobs/flash on ${fields.board}`);
    },
    flashRefused: async (token, fields, elf) => {
      const res = await fetch(`${baseUrl}/api/v1/jobs/flash`, { method: 'POST', headers: bearer(token), body: flashBody(fields, elf) });
      return errorAnswer(res, `POST /api/v1/jobs/flash on ${fields.board}`);
    },
    openSessionRefused: async (token, board) => {
      const res = await fetch(`${baseUrl}/api/v1/sessions`, { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board }) });
      return errorAnswer(res, `POST /api/v1/sessions on ${board}`);
    },
    openSession: async (token, board) => {
      const res = await fetch(`${baseUrl}/api/v1/sessions`, { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board }) });
      return (await parsed(res, z.object({ session_id: z.string(), state: z.literal('active') }), `POST /api/v1/sessions on ${board}`)).session_id;
    },
    endSession: async (token, sessionId) => {
      const res = await fetch(`${baseUrl}/api/v1/sessions/${sessionId}/end`, { method: 'POST', headers: bearer(token) });
      await parsed(res, z.object({ state: z.literal('ended') }), `POST /api/v1/sessions/${sessionId}/end`);
    },
    job: async (token, jobId) => parsed(await fetch(`${baseUrl}/api/v1/jobs/${jobId}`, { headers: bearer(token) }), jobSchema, `GET /api/v1/jobs/${jobId}`),
    settled: async (token, jobId, { timeoutMs, clock = systemClock }) => {
      let last: JobBody | undefined;
      return waitUntil(
        clock,
        async () => {
          last = await client.job(token, jobId);
          return last.state === 'done' || last.state === 'failed' ? last : undefined;
        },
        {
          timeoutMs,
          pollMs: 50,
          describe: `job ${jobId} to be done or failed`,
          lastSeen: () => (last ? JSON.stringify({ ...last, firmware: undefined }) : ''),
        },
      );
    },
  };
  return client;
}

const manifest = loadFirmwareManifest();

/** The committed example image of `program` for `board` and its manifest entry. */
export function exampleFirmware(board: string, program: FirmwareProgram): { entry: FirmwareEntry; elf: Uint8Array } {
  const entry = manifest.firmware.find((f) => f.board === board && f.program === program);
  if (!entry) throw new Error(`firmware/examples/manifest.json has no ${program} firmware for ${board}`);
  return { entry, elf: new Uint8Array(readFileSync(firmwarePath(entry))) };
}
