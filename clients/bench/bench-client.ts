import { agentRegistrationSchema, boardListSchema, healthSchema, jobSchema, sessionSchema } from '../../wire/bench/bench-schemas.js';
import { boardQueueSchema, jobTextSchema, uartInputAnswerSchema } from '../../wire/bench/job-answer-schemas.js';
import { armAnswerSchema } from '../../wire/bench/debug-schemas.js';
import { fieldOf, type HttpAnswer, readAnswer } from '../http-answer.js';
import { BenchApiError, benchApiError, BenchTimeoutError } from './bench-errors.js';
import { type CallOptions, deadlineSignal, exchange, formBody, type HttpSettings, jsonBody, realSleep, type RetryPolicy } from './bench-http.js';
import { BenchSession } from './bench-session.js';
import { fetchTransport, undiciTransport } from './bench-transport.js';
import { multipartBody } from './multipart-body.js';
import type { AgentRegistration, Board, BoardQueue, DebugArmed, Health, Job, JobText, Session } from './bench-types.js';
import { parseUartEvents, type UartEvent } from './uart-stream.js';

export interface BenchClientOptions {
  /** The bench service, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The agent token (`hb_...`) from `register`; calls that need it throw `BenchAuthError` without. */
  token?: string;
  /** Every call gives up after this many ms unless it says otherwise (default 30 000). */
  timeoutMs?: number;
  /** Retries of 409 (busy) and 503 answers, honouring `Retry-After` (default: none). */
  retry?: RetryPolicy;
  /**
   * Every call goes through this `fetch` when given (proxies, tests). Default: undici's `request`
   * on its keep-alive agent for the JSON calls (decision 0800), the global `fetch` for the streams.
   */
  fetch?: typeof fetch;
  /** How retries wait (default: real time); tests pass their own. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

/** Firmware to flash: the ELF bytes, or a `Blob`. */
export type Firmware = Uint8Array | Blob;

export interface FlashOptions extends CallOptions {
  /** Seconds of UART to capture, in the device's time base (the service's default when absent). */
  uartSeconds?: number;
  /** The session holding the board; without it the job takes the board for itself. */
  sessionId?: string;
  fileName?: string;
}

/** What `waitForUart` found: the match, or why it stopped looking, with the text seen. */
export type UartWait =
  | {
      matched: true;
      text: string;
      match: RegExpMatchArray;
      /** Device time from reset release of the chunk that completed the match, in the job's time base. */
      atSeconds: number;
      timeBase: 'simulated' | 'wall';
    }
  | { matched: false; text: string; reason: 'finished' | 'timeout'; job?: Job };

/**
 * The one client of the bench service API (docs/bench-api.md, docs/library.md), used by the
 * library, the vitest fixture, MCP, the CLI, the scenario runner and the tests. Every call takes
 * `timeoutMs` and `signal`; answers are parsed with the schemas the service validates and
 * documents them with (wire/bench); errors are the classes of bench-errors.ts. `request` answers
 * any status unparsed.
 */
export class BenchClient {
  readonly baseUrl: string;
  private readonly settings: HttpSettings;

  constructor(private readonly options: BenchClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.settings = {
      baseUrl: this.baseUrl,
      token: options.token,
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: options.retry ?? { attempts: 0 },
      transport: options.fetch ? fetchTransport(options.fetch) : undiciTransport,
      fetch: options.fetch ?? fetch,
      sleep: options.sleep ?? realSleep,
    };
  }

  /** The same client acting with another agent token. */
  withToken(token: string): BenchClient {
    return new BenchClient({ ...this.options, token });
  }

  /**
   * Sends any request and answers it whole, whatever its status (never throws on one): for calls
   * this class has no method for, and for callers that check statuses themselves (the scenario
   * runner's steps, tests of refusals). `token` stands in for the client's own; no timeout unless
   * `timeoutMs` is given (the caller's `fetch` may bound it).
   */
  async request(method: string, path: string, init: { token?: string; body?: RequestInit['body']; headers?: Record<string, string> } & CallOptions = {}): Promise<HttpAnswer> {
    const headers: Record<string, string> = { ...init.headers };
    const token = init.token ?? this.settings.token;
    if (token) headers.authorization = `Bearer ${token}`;
    const deadline = init.timeoutMs === undefined ? undefined : deadlineSignal(`${method} ${path}`, init.timeoutMs, init.signal);
    const signal = deadline?.signal ?? init.signal;
    try {
      return await readAnswer(await this.settings.fetch(this.baseUrl + path, { method, headers, ...(init.body !== undefined ? { body: init.body } : {}), ...(signal ? { signal } : {}) }));
    } catch (err) {
      throw signal?.aborted ? (signal.reason as Error) : err;
    } finally {
      deadline?.release();
    }
  }

  /** Registers an agent; the answer's `token` (shown once) is what `withToken` takes. */
  async register(label = 'agent', options: CallOptions = {}): Promise<AgentRegistration> {
    const answer = await exchange(this.settings, 'POST', '/api/v1/agents/register', { body: formBody({ label }), ...options });
    return agentRegistrationSchema.parse(answer.json);
  }

  async health(options: CallOptions = {}): Promise<Health> {
    return healthSchema.parse((await exchange(this.settings, 'GET', '/api/v1/health', options)).json);
  }

  async boards(options: CallOptions = {}): Promise<Board[]> {
    return boardListSchema.parse((await exchange(this.settings, 'GET', '/api/v1/boards', options)).json).boards;
  }

  /**
   * Opens an exclusive session on `board` and returns it heartbeating (see `BenchSession`; end
   * it, or `await using` it). `waitSeconds` (at most 300) queues for a busy board on the server
   * instead of failing at once with `BenchBusyError`. `heartbeat: false` leaves heartbeats to
   * the caller (`heartbeat(id)`), for sessions that outlive this process or request.
   */
  async openSession(board: string, options: CallOptions & { idleSeconds?: number; waitSeconds?: number; heartbeat?: boolean } = {}): Promise<BenchSession> {
    const form: Record<string, string> = { board };
    if (options.idleSeconds !== undefined) form.idle_seconds = String(options.idleSeconds);
    if (options.waitSeconds !== undefined) form.wait_seconds = String(options.waitSeconds);
    const timeoutMs = options.timeoutMs ?? Math.max(this.settings.timeoutMs, ((options.waitSeconds ?? 0) + 10) * 1000);
    const answer = await exchange(this.settings, 'POST', '/api/v1/sessions', { body: formBody(form), ...options, timeoutMs });
    return new BenchSession(this, sessionSchema.parse(answer.json), { heartbeat: options.heartbeat ?? true });
  }

  async getSession(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return sessionSchema.parse((await exchange(this.settings, 'GET', `/api/v1/sessions/${encodeURIComponent(sessionId)}`, options)).json);
  }

  async heartbeat(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return sessionSchema.parse((await exchange(this.settings, 'POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/heartbeat`, options)).json);
  }

  /** Extension (issue 32): the session's next job runs under a debugger, reached on its debug stream (docs/bench-api.md, "Debugging"). */
  async armDebug(sessionId: string, options: CallOptions & { idleTimeoutSeconds?: number } = {}): Promise<DebugArmed> {
    const body = jsonBody(options.idleTimeoutSeconds === undefined ? {} : { idle_timeout_seconds: options.idleTimeoutSeconds });
    return armAnswerSchema.parse((await exchange(this.settings, 'POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/debug`, { body, ...options })).json);
  }

  async endSession(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return sessionSchema.parse((await exchange(this.settings, 'POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/end`, options)).json);
  }

  /** Submits a flash job and answers it as queued; `flash` also waits for it to finish. */
  async submitFlash(board: string, firmware: Firmware, options: FlashOptions = {}): Promise<Job> {
    const fields: Record<string, string> = { board };
    if (options.uartSeconds !== undefined) fields.uart_seconds = String(options.uartSeconds);
    if (options.sessionId !== undefined) fields.session = options.sessionId;
    const bytes = firmware instanceof Blob ? new Uint8Array(await firmware.arrayBuffer()) : firmware;
    const type = (firmware instanceof Blob && firmware.type) || 'application/octet-stream';
    const { body, contentType } = multipartBody(fields, { field: 'firmware', fileName: options.fileName ?? 'firmware.elf', bytes, type });
    return jobSchema.parse((await exchange(this.settings, 'POST', '/api/v1/jobs/flash', { body: { body, contentType }, ...options })).json);
  }

  /** Flashes and runs `firmware` on `board` and answers the finished job (`done` or `failed`). */
  async flash(board: string, firmware: Firmware, options: FlashOptions = {}): Promise<Job> {
    const job = await this.submitFlash(board, firmware, options);
    return this.waitForJob(job.job_id, options);
  }

  /** The job now; with `waitSeconds` (at most 60) the service answers as soon as it is finished. */
  async getJob(jobId: string, options: CallOptions & { waitSeconds?: number } = {}): Promise<Job> {
    const query = options.waitSeconds === undefined ? '' : `?wait=${options.waitSeconds}`;
    const timeoutMs = options.timeoutMs ?? Math.max(this.settings.timeoutMs, ((options.waitSeconds ?? 0) + 10) * 1000);
    return jobSchema.parse((await exchange(this.settings, 'GET', `/api/v1/jobs/${encodeURIComponent(jobId)}${query}`, { ...options, timeoutMs })).json);
  }

  /**
   * The job with its UART as text only (no base64, no chunks); with `maxChars`, its head and tail
   * and how many characters were cut (`uart.cut_chars`). `waitSeconds` as for `getJob`.
   */
  async getJobText(jobId: string, options: CallOptions & { waitSeconds?: number; maxChars?: number } = {}): Promise<JobText> {
    const query = new URLSearchParams({ uart: 'text' });
    if (options.waitSeconds !== undefined) query.set('wait', String(options.waitSeconds));
    if (options.maxChars !== undefined) query.set('max_chars', String(options.maxChars));
    const timeoutMs = options.timeoutMs ?? Math.max(this.settings.timeoutMs, ((options.waitSeconds ?? 0) + 10) * 1000);
    return jobTextSchema.parse((await exchange(this.settings, 'GET', `/api/v1/jobs/${encodeURIComponent(jobId)}?${query}`, { ...options, timeoutMs })).json);
  }

  /**
   * Stops the job now, once its verdict is known, so its board is free for the next job
   * (decision 0535): it ends `failed` with kind `cancelled` and `reason`, keeping the UART it
   * captured. Answers the job once it has stopped; a finished job as it is (idempotent).
   */
  async cancelJob(jobId: string, options: CallOptions & { reason?: string } = {}): Promise<Job> {
    const body = formBody(options.reason === undefined ? {} : { reason: options.reason.slice(0, 200) });
    // The service waits up to 15 s for a running job to stop before it answers.
    const timeoutMs = options.timeoutMs ?? Math.max(this.settings.timeoutMs, 25_000);
    return jobSchema.parse((await exchange(this.settings, 'POST', `/api/v1/jobs/${encodeURIComponent(jobId)}/cancel`, { body, ...options, timeoutMs })).json);
  }

  /** The example firmware the service ships for `board` (`GET /examples/{board}/hello.elf`): its banner, then a tick every 100 ms. */
  async exampleFirmware(board: string, options: CallOptions = {}): Promise<Uint8Array> {
    const path = `/examples/${encodeURIComponent(board)}/hello.elf`;
    const { signal, release } = deadlineSignal(`GET ${path}`, options.timeoutMs ?? this.settings.timeoutMs, options.signal);
    try {
      const response = await this.settings.fetch(`${this.baseUrl}${path}`, { signal });
      if (!response.ok) {
        throw benchApiError('GET', path, response.status, fieldOf(await response.json().catch(() => undefined), 'detail'));
      }
      return new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      throw signal.aborted ? (signal.reason as Error) : err;
    } finally {
      release();
    }
  }

  /** `board`'s session queue on the service: how many wait for it, and this agent's place (null: not waiting). */
  async boardQueue(board: string, options: CallOptions = {}): Promise<BoardQueue> {
    return boardQueueSchema.parse((await exchange(this.settings, 'GET', `/api/v1/boards/${encodeURIComponent(board)}/queue`, options)).json);
  }

  /** Waits until the job is `done` or `failed` (long polls of at most 60 s), for at most `timeoutMs` (default 10 min). */
  async waitForJob(jobId: string, options: CallOptions = {}): Promise<Job> {
    const timeoutMs = options.timeoutMs ?? 600_000;
    const { signal, release } = deadlineSignal(`waiting for job ${jobId}`, timeoutMs, options.signal);
    let last: Job | undefined;
    try {
      // The first read already waits (one request per job fewer than a plain read first), but ends
      // a second before the deadline, so a timeout still says the state the job was last seen in.
      const firstWaitSeconds = Math.min(60, Math.floor(timeoutMs / 1000) - 1);
      last = await this.getJob(jobId, { ...(firstWaitSeconds > 0 ? { waitSeconds: firstWaitSeconds } : {}), signal, timeoutMs });
      while (last.state !== 'done' && last.state !== 'failed') {
        last = await this.getJob(jobId, { waitSeconds: 60, signal, timeoutMs: 75_000 });
      }
      return last;
    } catch (err) {
      if (signal.reason instanceof BenchTimeoutError) throw new BenchTimeoutError(`waiting for job ${jobId}`, timeoutMs, last ? `state ${last.state}` : '');
      throw err;
    } finally {
      release();
    }
  }

  /**
   * The job's UART as it is captured, from the first byte, then its end with the finished job:
   * the service's Server-Sent Events stream, resumed where it broke off; on a service without
   * it, polling with long waits (each new part of `uart.text` one event).
   */
  async *uart(jobId: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<UartEvent> {
    const state: { lastId?: string } = {};
    for (let reconnects = 0; reconnects <= 5; reconnects++) {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (this.settings.token) headers.authorization = `Bearer ${this.settings.token}`;
      if (state.lastId !== undefined) headers['last-event-id'] = state.lastId;
      const response = await this.settings.fetch(`${this.baseUrl}/api/v1/jobs/${encodeURIComponent(jobId)}/uart`, { headers, ...(options.signal ? { signal: options.signal } : {}) });
      const type = response.headers.get('content-type') ?? '';
      if (response.ok && type.startsWith('text/event-stream') && response.body) {
        try {
          for await (const event of parseUartEvents(response.body, state)) {
            yield event;
            if (event.kind === 'end') return;
          }
        } catch (err) {
          if (options.signal?.aborted) throw options.signal.reason as Error;
          if (!(err instanceof TypeError)) throw err; // a broken connection: resume below
        }
        continue;
      }
      if (response.status === 401 || response.status === 404 || response.status === 403) {
        throw new BenchApiError('GET', `/api/v1/jobs/${jobId}/uart`, response.status, fieldOf(await response.json().catch(() => undefined), 'detail'));
      }
      await response.body?.cancel();
      yield* this.pollUart(jobId, options.signal);
      return;
    }
    yield* this.pollUart(jobId, options.signal);
  }

  /** Waits for `pattern` in the job's UART (live), for at most `timeoutMs` (default 30 000). */
  async waitForUart(jobId: string, pattern: string | RegExp, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<UartWait> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const { signal, release } = deadlineSignal(`waiting for ${String(pattern)} on job ${jobId}`, timeoutMs, options.signal);
    const regex = typeof pattern === 'string' ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : pattern;
    let text = '';
    try {
      for await (const event of this.uart(jobId, { signal })) {
        if (event.kind === 'end') return { matched: false, text, reason: 'finished', job: event.job };
        text += event.text;
        const match = text.match(regex);
        if (match) return { matched: true, text, match, atSeconds: event.atNanos / 1e9, timeBase: event.timeBase };
      }
      return { matched: false, text, reason: 'finished' };
    } catch (err) {
      if (signal.reason instanceof BenchTimeoutError && !options.signal?.aborted) return { matched: false, text, reason: 'timeout' };
      throw err;
    } finally {
      release();
    }
  }

  /**
   * Sends bytes (or UTF-8 text) to the running job's serial input and answers how many were
   * accepted (all of them); the server writes them in order, at once or as soon as the job's
   * worker fetches them (docs/lab.md). `BenchBusyError` when the job is not running. Empty data
   * sends nothing and answers 0 (the server refuses an input of no bytes).
   */
  async writeUart(jobId: string, data: string | Uint8Array, options: CallOptions = {}): Promise<number> {
    if (data.length === 0) return 0;
    const body = jsonBody(typeof data === 'string' ? { text: data } : { base64: Buffer.from(data).toString('base64') });
    const answer = await exchange(this.settings, 'POST', `/api/v1/jobs/${encodeURIComponent(jobId)}/uart`, { body, ...options });
    return uartInputAnswerSchema.parse(answer.json).accepted_bytes;
  }

  private async *pollUart(jobId: string, signal: AbortSignal | undefined): AsyncGenerator<UartEvent> {
    let seen = 0;
    for (;;) {
      const job = await this.getJob(jobId, { waitSeconds: 1, ...(signal ? { signal } : {}) });
      const text = job.uart?.text ?? '';
      if (text.length > seen) {
        const part = text.slice(seen);
        yield { kind: 'uart', offset: seen, atNanos: 0, timeBase: job.uart?.time_base ?? 'wall', text: part, bytes: new TextEncoder().encode(part) };
        seen = text.length;
      }
      if (job.state === 'done' || job.state === 'failed') {
        yield { kind: 'end', job };
        return;
      }
    }
  }
}
