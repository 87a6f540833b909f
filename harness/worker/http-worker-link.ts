import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BoardHealth, UartChunk } from '../../backends/backend.js';
import { type Clock, sleep, type TimerHandle } from '../../core/clock.js';
import type { z } from 'zod';
import { boardHealthWireSchema, claimAnswerSchema, inputAnswerSchema, jobControlSchema, okAnswerSchema, finishAnswerSchema } from '../../wire/worker/worker-schemas.js';
import type { Socket } from 'node:net';
import { type DebugLegAddress, dialDebugLeg } from '../../clients/bench/debug-leg.js';
import type { BoardHealthLink, HealthCheckReport, JobControl, JobTicket, SerialInputBatch, UartCaptureReport, UartReport, WorkerJobOutcome, WorkerLink, WorkerTask } from './worker-link.js';

/** A refusal by the server, with its status and detail. */
export class WorkerServerError extends Error {
  override readonly name = 'WorkerServerError';
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`the bench server answered ${status}: ${detail}`);
  }
}

export interface HttpWorkerLinkOptions {
  /** The bench server, e.g. `https://bench.lab.example`. */
  serverUrl: string;
  /** The worker token (`hbw_...`). */
  token: string;
  clock: Clock;
  /** Where fetched firmware is kept by sha256, so a re-run of the same image is not fetched again. */
  firmwareCacheDir: string;
  /** Seconds a claim waits on the server for a job. Default 20. */
  claimWaitSeconds?: number;
  /** Host ms UART is gathered before it is sent (one request per batch). Default 100. */
  uartBatchMs?: number;
  /** Host ms a finished job's outcome is retried while the server cannot be reached. Default 600 000. */
  deliverForMs?: number;
  logError: (message: string, cause?: unknown) => void;
}

/** The longest pause between two attempts to deliver an outcome (host ms): a server back up hears it within this. */
export const MAX_DELIVERY_PAUSE_MS = 30_000;

interface PendingUart {
  report: UartReport;
  timer: TimerHandle | undefined;
  sending: Promise<void>;
}

/**
 * The worker protocol over HTTP, outbound only (docs/worker-protocol.md): what `hilbench worker`
 * uses on a single-board computer. UART is sent in small batches as it is captured; an outcome the
 * server cannot take now is retried (bounded by `deliverForMs`), so a job that finished while the
 * network was down still reports once it is back.
 */
export class HttpWorkerLink implements WorkerLink, BoardHealthLink {
  private readonly base: string;
  private readonly pending = new Map<string, PendingUart>();
  /** Per job, UART a send could not deliver (the server unreachable or failing): sent again before the next batch. */
  private readonly undelivered = new Map<string, UartReport>();

  constructor(private readonly options: HttpWorkerLinkOptions) {
    this.base = options.serverUrl.replace(/\/+$/, '');
  }

  /**
   * POST/GET a worker route and parse its JSON answer with `schema` (the worker protocol's wire
   * schemas); a non-2xx answer throws `WorkerServerError` with the server's detail.
   */
  async request<T>(method: 'GET' | 'POST', route: string, schema: z.ZodType<T>, body?: unknown, signal?: AbortSignal): Promise<T> {
    const res = await this.send(method, route, body, signal);
    return schema.parse(await res.json());
  }

  /** GET a worker route that answers bytes (the firmware). */
  private async bytes(route: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.send('GET', route)).arrayBuffer());
  }

  private async send(method: 'GET' | 'POST', route: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    const res = await fetch(`${this.base}${route}`, {
      method,
      headers: { authorization: `Bearer ${this.options.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!res.ok) {
      const text = await res.text();
      let detail = text;
      try {
        const parsed: unknown = JSON.parse(text);
        const given = typeof parsed === 'object' && parsed !== null && 'detail' in parsed ? parsed.detail : undefined;
        detail = typeof given === 'string' ? given : JSON.stringify(given);
      } catch {
        /* not JSON: the text is the detail */
      }
      throw new WorkerServerError(res.status, detail);
    }
    return res;
  }

  async claim(boards: readonly string[], signal: AbortSignal): Promise<WorkerTask | undefined> {
    try {
      const answer = await this.request('POST', '/api/v1/worker/claim', claimAnswerSchema, { boards, wait_seconds: this.options.claimWaitSeconds ?? 20 }, signal);
      const { job, health_check: check } = answer;
      if (check) return { kind: 'health-check', checkId: check.check_id, board: check.board, ...(check.instance === undefined ? {} : { instance: check.instance }), timeoutMs: check.timeout_ms };
      return job
        ? {
            kind: 'job',
            jobId: job.job_id,
            board: job.board,
            ...(job.instance === undefined ? {} : { instance: job.instance }),
            firmwareSha256: job.firmware_sha256,
            uartSeconds: job.uart_seconds,
            maxUartBytes: job.max_uart_bytes,
            ...(job.debug ? { debug: { idleTimeoutMs: job.debug.idle_timeout_ms, maxDebugMs: job.debug.max_debug_ms } } : {}),
          }
        : undefined;
    } catch (err) {
      if (signal.aborted) return undefined;
      throw err;
    }
  }

  async firmware(ticket: JobTicket): Promise<Uint8Array> {
    const cached = path.join(this.options.firmwareCacheDir, ticket.firmwareSha256);
    const fromCache = await readFile(cached).catch(() => undefined);
    if (fromCache && sha256(fromCache) === ticket.firmwareSha256) return new Uint8Array(fromCache);
    const bytes = await this.bytes(`/api/v1/worker/jobs/${encodeURIComponent(ticket.jobId)}/firmware`);
    // Kept only when it is what the job names; written aside and renamed, so a crash leaves no half file.
    if (sha256(bytes) === ticket.firmwareSha256) {
      await mkdir(this.options.firmwareCacheDir, { recursive: true, mode: 0o700 });
      // One name per write: jobs on several instances of a pool fetch the same firmware at once (decision 0510).
      const temp = `${cached}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
      await writeFile(temp, bytes, { mode: 0o600 });
      await rename(temp, cached);
    }
    return bytes;
  }

  running(jobId: string): Promise<JobControl> {
    return this.request('POST', `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/running`, jobControlSchema);
  }

  heartbeat(jobId: string): Promise<JobControl> {
    return this.request('POST', `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/heartbeat`, jobControlSchema);
  }

  /** A long poll for the job's serial input (`POST .../input`); a refusal (404, 409) means the job is no longer ours. */
  async input(jobId: string, writtenThroughSeq: number, signal: AbortSignal): Promise<SerialInputBatch> {
    try {
      const answer = await this.request(
        'POST',
        `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/input`,
        inputAnswerSchema,
        { written_through: writtenThroughSeq, wait_seconds: this.options.claimWaitSeconds ?? 20 },
        signal,
      );
      const inputs = answer.inputs.map((i) => ({ seq: i.seq, bytes: new Uint8Array(Buffer.from(i.base64, 'base64')) }));
      return { inputs, lost: false, ...(typeof answer.stop === 'string' ? { stop: answer.stop } : {}) };
    } catch (err) {
      if (signal.aborted) return { inputs: [], lost: false };
      if (err instanceof WorkerServerError && (err.status === 404 || err.status === 409)) return { inputs: [], lost: true };
      throw err;
    }
  }

  /** A debug job's leg for its next debugger: an `Upgrade: tcp` request this worker dials and the server holds (decision 0910). */
  debugDial(jobId: string, signal: AbortSignal): Promise<Socket | undefined> {
    return dialDebugLeg({ ...this.debugLegAddress(jobId), clock: this.options.clock, signal });
  }

  /** Where this worker dials a debug job's legs: what a sim engine's thread is told, to dial them itself. */
  debugLegAddress(jobId: string): DebugLegAddress {
    return { serverUrl: this.options.serverUrl, token: this.options.token, jobId };
  }

  async healthCheckDone(checkId: string, outcome: HealthCheckReport): Promise<void> {
    const wire =
      outcome.passed
        ? { passed: true, uart_text: outcome.uartText, elapsed_ns: outcome.elapsedNanos }
        : { passed: false, reason: outcome.reason, uart_text: outcome.uartText, refused: 'refused' in outcome };
    await this.request('POST', `/api/v1/worker/health-checks/${encodeURIComponent(checkId)}`, okAnswerSchema, wire);
  }

  async getBoardHealth(boardId: string): Promise<BoardHealth> {
    return boardHealthFromWire(await this.request('GET', `/api/v1/worker/boards/${encodeURIComponent(boardId)}/health`, boardHealthWireSchema));
  }

  async putBoardHealth(boardId: string, health: BoardHealth): Promise<void> {
    await this.request('POST', `/api/v1/worker/boards/${encodeURIComponent(boardId)}/health`, okAnswerSchema, boardHealthToWire(health));
  }

  /** Queues `report` and sends it with the others of the next `uartBatchMs`. */
  async uart(jobId: string, report: UartReport): Promise<void> {
    const pending = this.pending.get(jobId);
    if (pending?.timer !== undefined) {
      pending.report = { ...report, offset: pending.report.offset, chunks: [...pending.report.chunks, ...report.chunks] };
      return;
    }
    const entry: PendingUart = { report, timer: undefined, sending: pending?.sending ?? Promise.resolve() };
    entry.timer = this.options.clock.setTimeout(() => this.flush(jobId, entry), this.options.uartBatchMs ?? 100);
    this.pending.set(jobId, entry);
  }

  async finish(jobId: string, outcome: WorkerJobOutcome): Promise<void> {
    const pending = this.pending.get(jobId);
    if (pending) {
      if (pending.timer !== undefined) this.flush(jobId, pending);
      await pending.sending;
      this.pending.delete(jobId);
    }
    // The outcome carries the whole capture, what never got through included.
    this.undelivered.delete(jobId);
    const body = { outcome: outcomeToWire(outcome) };
    const giveUpAtMs = this.options.clock.nowMs() + (this.options.deliverForMs ?? 600_000);
    for (let pauseMs = 1_000; ; pauseMs = Math.min(pauseMs * 2, MAX_DELIVERY_PAUSE_MS)) {
      try {
        await this.request('POST', `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/finish`, finishAnswerSchema, body);
        return;
      } catch (err) {
        // A refusal (the job is no longer ours) will not change; an unreachable server may.
        const retriable = !(err instanceof WorkerServerError) || err.status >= 500 || err.status === 429;
        if (!retriable || this.options.clock.nowMs() + pauseMs > giveUpAtMs) throw err;
        this.options.logError(`delivering the outcome of job ${jobId} failed; trying again in ${pauseMs} ms`, err);
        await sleep(this.options.clock, pauseMs);
      }
    }
  }

  private flush(jobId: string, entry: PendingUart): void {
    if (entry.timer !== undefined) this.options.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
    const { report: batch } = entry;
    entry.sending = entry.sending.then(async () => {
      // A batch that did not get through goes first, with this one: dropped, it would leave a gap the
      // server counts as lost bytes (and live readers never see), though the network only blinked.
      const before = this.undelivered.get(jobId);
      this.undelivered.delete(jobId);
      const report = before ? { ...batch, offset: before.offset, chunks: [...before.chunks, ...batch.chunks] } : batch;
      try {
        await this.request('POST', `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/uart`, okAnswerSchema, { offset: report.offset, ...captureToWire({ ...report, uart: report.chunks }) });
      } catch (err) {
        // A refusal (the job is no longer ours, or the report is malformed) will not change; an unreachable server may.
        if (!(err instanceof WorkerServerError) || err.status >= 500 || err.status === 429) this.undelivered.set(jobId, report);
        this.options.logError(`sending the UART of job ${jobId} failed (sent again with the next batch; the outcome carries all of it)`, err);
      }
    });
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

const chunksToWire = (chunks: readonly UartChunk[]) => chunks.map((c) => ({ at_ns: c.atNanos, base64: Buffer.from(c.bytes).toString('base64') }));

function captureToWire(c: UartCaptureReport) {
  return { time_base: c.timeBase, clock_source: c.clockSource ?? null, dropped_bytes: c.droppedUartBytes, chunks: chunksToWire(c.uart) };
}

function outcomeToWire(outcome: WorkerJobOutcome) {
  if (outcome.state === 'failed') return { state: 'failed', failure: outcome.failure, uart: outcome.uart ? captureToWire(outcome.uart) : null };
  const { stop } = outcome;
  const wireStop =
    stop.reason === 'exited'
      ? { reason: 'exited', exit_code: stop.exitCode, elapsed_ns: stop.elapsedNanos }
      : stop.reason === 'crashed'
        ? { reason: 'crashed', message: stop.message, elapsed_ns: stop.elapsedNanos }
        : { reason: stop.reason, elapsed_ns: stop.elapsedNanos };
  return { state: 'done', uart: captureToWire(outcome.uart), stop: wireStop, flash_ms: outcome.flashMs, run_ms: outcome.runMs };
}

/** Board health on the wire (`/api/v1/worker/boards/{board}/health`). */
type WireBoardHealth = z.infer<typeof boardHealthWireSchema>;

function boardHealthFromWire(w: WireBoardHealth): BoardHealth {
  return {
    consecutiveFailures: w.consecutive_failures,
    lastFailure: w.last_failure ?? undefined,
    quarantine: w.quarantine ? { sinceMs: w.quarantine.since_ms, reason: w.quarantine.reason } : undefined,
  };
}

function boardHealthToWire(h: BoardHealth): WireBoardHealth {
  return {
    consecutive_failures: h.consecutiveFailures,
    last_failure: h.lastFailure ?? null,
    quarantine: h.quarantine ? { since_ms: h.quarantine.sinceMs, reason: h.quarantine.reason } : null,
  };
}
