import { z } from 'zod';
import type { Clock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { isFinishedJobState, jobStates } from '../job-states.js';
import { readAnswer } from './http-answer.js';

/**
 * A small client of the bench service API (docs/bench-api.md), used by the scenario runner, the
 * recorder's tests and the benchmarks. It speaks only the public HTTP API, so it works the same
 * against an in-process server and a remote one.
 */

/** A non-2xx answer; `detail` is the service's `{"detail": ...}` (a string or the 422 list). */
export class BenchApiError extends Error {
  override readonly name = 'BenchApiError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(`${method} ${path} answered ${status}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
  }
}

export const jobViewSchema = z
  .object({
    job_id: z.string(),
    board: z.string(),
    state: z.enum(jobStates),
    uart: z.object({ text: z.string(), bytes: z.number(), time_base: z.enum(['simulated', 'wall']) }).passthrough().nullable(),
    failure: z.object({ kind: z.string(), message: z.string() }).nullable(),
  })
  .passthrough();
export type JobView = z.infer<typeof jobViewSchema>;

const registrationSchema = z.object({ agent_id: z.string(), label: z.string(), token: z.string() }).passthrough();
const sessionViewSchema = z.object({ session_id: z.string(), board: z.string(), state: z.string(), expires_at: z.string() }).passthrough();
export type SessionView = z.infer<typeof sessionViewSchema>;

export interface BenchClientOptions {
  /** e.g. http://127.0.0.1:8080 (no trailing slash needed). */
  baseUrl: string;
  fetch?: typeof fetch;
}

export class BenchClient {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;

  constructor(options: BenchClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchFn = options.fetch ?? fetch;
  }

  /** Sends a request and returns status and parsed JSON (or text); never throws on status. */
  async request(method: string, path: string, init: { token?: string; body?: RequestInit["body"]; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    return readAnswer(await this.fetchFn(this.baseUrl + path, { method, headers, body: init.body }));
  }

  private async call<T>(schema: z.ZodType<T>, method: string, path: string, init: Parameters<BenchClient['request']>[2] = {}): Promise<T> {
    const res = await this.request(method, path, init);
    if (res.status < 200 || res.status >= 300) {
      throw new BenchApiError(method, path, res.status, (res.json as { detail?: unknown } | undefined)?.detail ?? res.text);
    }
    return schema.parse(res.json);
  }

  register(label = 'agent') {
    return this.call(registrationSchema, 'POST', '/api/v1/agents/register', { body: new URLSearchParams({ label }) });
  }

  openSession(token: string, board: string, idleSeconds?: number) {
    const form = new URLSearchParams({ board });
    if (idleSeconds !== undefined) form.set('idle_seconds', String(idleSeconds));
    return this.call(sessionViewSchema, 'POST', '/api/v1/sessions', { token, body: form });
  }

  getSession(token: string, sessionId: string) {
    return this.call(sessionViewSchema, 'GET', `/api/v1/sessions/${encodeURIComponent(sessionId)}`, { token });
  }

  heartbeat(token: string, sessionId: string) {
    return this.call(sessionViewSchema, 'POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/heartbeat`, { token });
  }

  endSession(token: string, sessionId: string) {
    return this.call(sessionViewSchema, 'POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/end`, { token });
  }

  /** Submits a flash job (multipart: board, firmware, uart_seconds, session). */
  flash(token: string, options: { board: string; firmware: Uint8Array; uartSeconds?: number; sessionId?: string; fileName?: string }) {
    const form = new FormData();
    form.set('board', options.board);
    form.set('firmware', new Blob([options.firmware], { type: 'application/octet-stream' }), options.fileName ?? 'firmware.elf');
    if (options.uartSeconds !== undefined) form.set('uart_seconds', String(options.uartSeconds));
    if (options.sessionId) form.set('session', options.sessionId);
    return this.call(jobViewSchema, 'POST', '/api/v1/jobs/flash', { token, body: form });
  }

  getJob(token: string, jobId: string) {
    return this.call(jobViewSchema, 'GET', `/api/v1/jobs/${encodeURIComponent(jobId)}`, { token });
  }

  /**
   * Polls a job until it is `done` or `failed`, every `pollMs` on `clock`, for at most
   * `timeoutMs`. The timeout names the job and the last state seen.
   */
  async waitForJob(token: string, jobId: string, options: { clock: Clock; timeoutMs: number; pollMs?: number }): Promise<JobView> {
    let last: JobView | undefined;
    return waitUntil(
      options.clock,
      async () => {
        last = await this.getJob(token, jobId);
        return isFinishedJobState(last.state) ? last : undefined;
      },
      { timeoutMs: options.timeoutMs, pollMs: options.pollMs ?? 20, describe: `job ${jobId} to finish`, lastSeen: () => (last ? `state ${last.state}` : '') },
    );
  }
}
