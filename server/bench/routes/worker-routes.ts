import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { pathParam } from '../../http/api-route.js';
import { type BenchRoute, type RouteCaller } from './bench-route.js';
import { readJsonBody } from '../../http/json-body.js';
import { parseOr422 } from '../../http/http-error.js';
import { parseFormBody } from '../../http/parse-form.js';
import type { AgentRecord } from '../../storage/bench/bench-store.js';
import type { BoardHealthRecord } from '../../storage/bench/board-health-store.js';
import type { WorkerBoardReport, WorkerRecord } from '../../storage/bench/worker-registry.js';
import { mapBenchErrors } from './bench-error-http.js';
import type { WorkerAdmin } from '../workers/worker-admin.js';
import { captureFromWire, type WorkerProtocol, type WorkerTimings } from '../workers/worker-protocol.js';
import {
  announceAnswerSchema,
  announceBodySchema,
  boardHealthWireSchema,
  claimAnswerSchema,
  claimBodySchema,
  createWorkerBodySchema,
  finishAnswerSchema,
  finishBodySchema,
  healthCheckReportSchema,
  heartbeatBodySchema,
  inputAnswerSchema,
  inputBodySchema,
  jobControlSchema,
  okAnswerSchema,
  uartBodySchema,
  workerCreatedSchema,
  workerListSchema,
  workerViewAnswerSchema,
} from '../../../wire/worker/worker-schemas.js';

const ERRORS = { 500: 'Internal Server Error (unexpected; logged on the server)' };
const WORKER_ERRORS = { ...ERRORS, 401: 'Missing or invalid worker token (agent tokens never work here)', 403: 'Worker revoked, or a board it did not announce' };
/** Routes with a JSON body: not JSON (415), over the limit (413), cut off mid-body or not UTF-8 (400). */
const BODY_ERRORS = { 400: 'The body ended before it was complete, or its bytes are not UTF-8 (There was an error parsing the body)', 413: 'Body over the limit', 415: 'Body is not JSON' };
const JOB_ERRORS = { ...WORKER_ERRORS, 404: 'No such job among this worker’s', 409: 'The worker no longer holds the job' };
/** Long polls: a worker waits in at most a few at once (decision 0470). */
const LONG_POLL_ERRORS = { 429: 'The worker already waits in as many such long polls as it may (Retry-After: 1)' };
const ADMIN_ERRORS = { ...ERRORS, 401: 'Missing or wrong x-admin-token', 403: 'Admin disabled (no admin token configured)' };

/** JSON bodies of the worker protocol: the finish report carries a job's whole UART (base64). */
const MAX_WORKER_BODY_BYTES = 4 * 1024 * 1024;

/**
 * A worker's diagnostic text as the stores keep it: a NUL, which a PostgreSQL text cannot hold (the
 * request answered 500, so a job failure whose message held one could never be recorded), becomes
 * U+FFFD, as in a job's UART text. Only free-text diagnostics; ids and labels are refused instead.
 */
function storable(text: string): string {
  return text.replaceAll('\u0000', '\ufffd');
}

export function workerOf(caller: RouteCaller<AgentRecord>): WorkerRecord {
  if (!caller.worker) throw new Error('workerOf used on a route without worker auth; the route table and the handler disagree');
  return caller.worker as WorkerRecord;
}

const jsonBody = <T extends z.ZodObject>(schema: T) => ({ kind: 'json' as const, schema, required: true });

const readBody = async <T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<T> =>
  parseOr422(schema, await readJsonBody(req, { maxBodyBytes: MAX_WORKER_BODY_BYTES }), 'body');

/**
 * The worker protocol (docs/worker-protocol.md): what a bench worker on a single-board computer
 * calls, outbound only, with its worker token; and the administrator's worker tokens.
 */
export function workerRoutes(deps: { protocol: WorkerProtocol; admin: WorkerAdmin; timings: WorkerTimings }): BenchRoute[] {
  const { protocol, admin, timings } = deps;
  const jobPath = (action: string) => `/api/v1/worker/jobs/{job_id}/${action}`;
  const routes: BenchRoute[] = [
    {
      method: 'post',
      path: '/api/v1/worker/announce',
      operationId: 'workerAnnounce',
      summary: 'A worker (re)starting: its boards and the jobs it still runs',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(announceBodySchema),
      response: announceAnswerSchema,
      errors: { ...WORKER_ERRORS, ...BODY_ERRORS },
      handler: async (req, res, caller) => {
        const worker = workerOf(caller);
        const body = await readBody(req, announceBodySchema);
        const { interrupted } = await protocol.announce(worker, body.boards.map(boardReportFromWire), body.running_jobs);
        res.json({
          worker_id: worker.workerId,
          label: worker.label,
          heartbeat_seconds: timings.heartbeatSeconds,
          offline_after_seconds: timings.offlineAfterSeconds,
          claim_seconds: timings.claimSeconds,
          interrupted_jobs: interrupted.map((j) => j.jobId),
        });
      },
    },
    {
      method: 'post',
      path: '/api/v1/worker/heartbeat',
      operationId: 'workerHeartbeat',
      summary: 'The worker is alive (and, optionally, how its boards are now)',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(heartbeatBodySchema),
      response: okAnswerSchema,
      errors: { ...WORKER_ERRORS, ...BODY_ERRORS },
      handler: async (req, res, caller) => {
        const body = await readBody(req, heartbeatBodySchema);
        await protocol.heartbeat(workerOf(caller), body.boards?.map(boardReportFromWire));
        res.json({ ok: true });
      },
    },
    {
      method: 'post',
      path: '/api/v1/worker/claim',
      operationId: 'workerClaim',
      summary: 'The next job on one of the worker’s boards (a long poll; `{"job": null}` when none came)',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(claimBodySchema),
      response: claimAnswerSchema,
      errors: { ...WORKER_ERRORS, ...BODY_ERRORS, ...LONG_POLL_ERRORS },
      handler: async (req, res, caller) => {
        const body = await readBody(req, claimBodySchema);
        const gone = new AbortController();
        res.on('close', () => gone.abort());
        const task = await protocol.claim(workerOf(caller), body.boards, body.wait_seconds * 1000, gone.signal);
        res.json({
          health_check: task?.kind === 'health-check' ? { check_id: task.checkId, board: task.board, ...(task.instance === undefined ? {} : { instance: task.instance }), timeout_ms: task.timeoutMs } : null,
          job:
            task?.kind === 'job'
              ? {
                  job_id: task.jobId,
                  board: task.board,
                  ...(task.instance === undefined ? {} : { instance: task.instance }),
                  firmware_sha256: task.firmwareSha256,
                  uart_seconds: task.uartSeconds,
                  max_uart_bytes: task.maxUartBytes,
                  ...(task.debug ? { debug: { idle_timeout_ms: task.debug.idleTimeoutMs, max_debug_ms: task.debug.maxDebugMs } } : {}),
                }
              : null,
        });
      },
    },
    {
      method: 'get',
      path: jobPath('firmware'),
      operationId: 'workerFirmware',
      summary: 'The firmware of a job the worker holds (application/octet-stream)',
      tags: ['workers'],
      auth: 'worker',
      response: z.string().meta({ description: 'The ELF bytes.' }),
      produces: 'application/octet-stream',
      errors: JOB_ERRORS,
      handler: async (req, res, caller) => {
        const bytes = await protocol.firmware(workerOf(caller), pathParam(req, 'job_id'));
        res.type('application/octet-stream').send(Buffer.from(bytes));
      },
    },
    {
      method: 'post',
      path: jobPath('running'),
      operationId: 'workerJobRunning',
      summary: 'Reset was released: the job is running',
      tags: ['workers'],
      auth: 'worker',
      response: jobControlSchema,
      errors: JOB_ERRORS,
      handler: async (req, res, caller) => res.json(await protocol.running(workerOf(caller), pathParam(req, 'job_id'))),
    },
    {
      method: 'post',
      path: jobPath('heartbeat'),
      operationId: 'workerJobHeartbeat',
      summary: 'Renews the worker’s claim on a running job; says whether it must stop',
      tags: ['workers'],
      auth: 'worker',
      response: jobControlSchema,
      errors: JOB_ERRORS,
      handler: async (req, res, caller) => res.json(await protocol.jobHeartbeat(workerOf(caller), pathParam(req, 'job_id'))),
    },
    {
      method: 'post',
      path: jobPath('uart'),
      operationId: 'workerJobUart',
      summary: 'UART the job printed, from a byte offset of its capture (a range sent again is kept once)',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(uartBodySchema),
      response: okAnswerSchema,
      errors: { ...JOB_ERRORS, ...BODY_ERRORS },
      handler: async (req, res, caller) => {
        const body = await readBody(req, uartBodySchema);
        await protocol.uart(workerOf(caller), pathParam(req, 'job_id'), body.offset, body);
        res.json({ ok: true });
      },
    },
    {
      method: 'post',
      path: jobPath('input'),
      operationId: 'workerJobInput',
      summary: 'Serial input agents sent to the job, after the inputs the worker says it wrote (a long poll; `{"inputs": []}` when none came)',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(inputBodySchema),
      response: inputAnswerSchema,
      errors: { ...JOB_ERRORS, ...BODY_ERRORS, ...LONG_POLL_ERRORS },
      handler: async (req, res, caller) => {
        const body = await readBody(req, inputBodySchema);
        const gone = new AbortController();
        res.on('close', () => gone.abort());
        const batch = await protocol.input(workerOf(caller), pathParam(req, 'job_id'), body.written_through, body.wait_seconds * 1000, gone.signal);
        res.json({ inputs: batch.inputs.map((i) => ({ seq: i.seq, base64: Buffer.from(i.bytes).toString('base64') })), ...(batch.stop === undefined ? {} : { stop: batch.stop }) });
      },
    },
    {
      method: 'post',
      path: jobPath('finish'),
      operationId: 'workerJobFinish',
      summary: 'The job’s outcome, with everything it printed',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(finishBodySchema),
      response: finishAnswerSchema,
      errors: { ...JOB_ERRORS, ...BODY_ERRORS },
      handler: async (req, res, caller) => {
        const { outcome } = await readBody(req, finishBodySchema);
        const job = await protocol.finish(
          workerOf(caller),
          pathParam(req, 'job_id'),
          outcome.state === 'done'
            ? {
                state: 'done',
                uart: captureFromWire(outcome.uart),
                stop: stopFromWire(outcome.stop),
                flashMs: outcome.flash_ms,
                runMs: outcome.run_ms,
              }
            : { state: 'failed', failure: { ...outcome.failure, message: storable(outcome.failure.message) }, uart: outcome.uart ? captureFromWire(outcome.uart) : null },
        );
        res.json({ job_id: job.jobId, state: job.state });
      },
    },
    {
      method: 'get',
      path: '/api/v1/worker/boards/{board}/health',
      operationId: 'workerGetBoardHealth',
      summary: 'The health the server keeps of a board: consecutive failures, the last one, the quarantine (docs/lab.md)',
      tags: ['workers'],
      auth: 'worker',
      response: boardHealthWireSchema,
      errors: WORKER_ERRORS,
      handler: async (req, res, caller) => res.json(boardHealthToWire(await protocol.boardHealth(workerOf(caller), pathParam(req, 'board')))),
    },
    {
      method: 'post',
      path: '/api/v1/worker/boards/{board}/health',
      operationId: 'workerPutBoardHealth',
      summary: 'The worker’s backend counted a failure, quarantined or released one of its boards',
      tags: ['workers'],
      auth: 'worker',
      body: jsonBody(boardHealthWireSchema),
      response: okAnswerSchema,
      errors: { ...WORKER_ERRORS, ...BODY_ERRORS },
      handler: async (req, res, caller) => {
        const body = await readBody(req, boardHealthWireSchema);
        await protocol.putBoardHealth(workerOf(caller), pathParam(req, 'board'), {
          consecutiveFailures: body.consecutive_failures,
          lastFailure: body.last_failure === null ? undefined : storable(body.last_failure),
          quarantine: body.quarantine ? { sinceMs: body.quarantine.since_ms, reason: storable(body.quarantine.reason) } : undefined,
        });
        res.json({ ok: true });
      },
    },
    {
      method: 'post',
      path: '/api/v1/worker/health-checks/{check_id}',
      operationId: 'workerHealthCheckDone',
      summary: 'The outcome of an administrator’s health check the worker ran',
      tags: ['workers'],
      auth: 'worker',
      body: { kind: 'json', schema: healthCheckReportSchema as unknown as z.ZodObject, required: true },
      response: okAnswerSchema,
      errors: { ...WORKER_ERRORS, ...BODY_ERRORS, 404: 'No such health check among this worker’s', 409: 'The check ended already (its outcome came too late)' },
      handler: async (req, res, caller) => {
        const body = await readBody(req, healthCheckReportSchema);
        await protocol.healthCheckDone(
          workerOf(caller),
          pathParam(req, 'check_id'),
          body.passed
            ? { passed: true, uartText: body.uart_text, elapsedNanos: body.elapsed_ns }
            : body.refused
              ? { passed: false, refused: true, reason: storable(body.reason), uartText: '' }
              : { passed: false, reason: storable(body.reason), uartText: body.uart_text },
        );
        res.json({ ok: true });
      },
    },
    {
      method: 'post',
      path: '/admin/workers',
      operationId: 'adminCreateWorker',
      summary: 'Create a bench worker and its token (shown once)',
      tags: ['admin'],
      auth: 'admin',
      body: { kind: 'form', schema: createWorkerBodySchema, required: true },
      response: workerCreatedSchema,
      errors: { ...ADMIN_ERRORS, 400: 'Malformed body', 413: 'Body over the limit', 415: 'Body is neither a form nor JSON' },
      handler: async (req, res) => {
        // A form, like every other bench write; JSON too, for scripts.
        const isJson = (req.headers['content-type'] ?? '').startsWith('application/json');
        const input = isJson ? await readJsonBody(req, { maxBodyBytes: 16 * 1024 }) : (await parseFormBody(req, { maxBodyBytes: 16 * 1024 })).values;
        const { label } = parseOr422(createWorkerBodySchema, input, 'body');
        res.json(await admin.create(label));
      },
    },
    {
      method: 'get',
      path: '/admin/workers',
      operationId: 'adminListWorkers',
      summary: 'Every bench worker: online or not, last heard from, its boards',
      tags: ['admin'],
      auth: 'admin',
      response: workerListSchema,
      errors: ADMIN_ERRORS,
      handler: async (_req, res) => res.json({ workers: await admin.list() }),
    },
    {
      method: 'post',
      path: '/admin/workers/{worker_id}/revoke',
      operationId: 'adminRevokeWorker',
      summary: 'Revoke a worker’s token; its running jobs fail as interrupted',
      tags: ['admin'],
      auth: 'admin',
      response: workerViewAnswerSchema,
      errors: { ...ADMIN_ERRORS, 404: 'No such worker' },
      handler: async (req, res) => res.json(await admin.revoke(pathParam(req, 'worker_id'))),
    },
  ];
  return routes.map((route) => ({ ...route, handler: mapBenchErrors(route.handler) }));
}

type WireStop = z.infer<typeof finishBodySchema>['outcome'] extends infer O ? (O extends { stop: infer S } ? S : never) : never;

function stopFromWire(stop: WireStop) {
  switch (stop.reason) {
    case 'exited':
      return { reason: 'exited' as const, exitCode: stop.exit_code, elapsedNanos: stop.elapsed_ns };
    case 'crashed':
      return { reason: 'crashed' as const, message: storable(stop.message), elapsedNanos: stop.elapsed_ns };
    default:
      return { reason: stop.reason, elapsedNanos: stop.elapsed_ns };
  }
}

function boardReportFromWire(b: z.infer<typeof announceBodySchema>['boards'][number]): WorkerBoardReport {
  return { board: b.board, backend: b.backend, available: b.available, reason: b.reason === null ? null : storable(b.reason), keepsHealth: b.keeps_health, healthCheck: b.health_check, quarantined: b.quarantined, ...(b.pool_size === 1 ? {} : { poolSize: b.pool_size }) };
}

function boardHealthToWire(h: BoardHealthRecord): z.infer<typeof boardHealthWireSchema> {
  return {
    consecutive_failures: h.consecutiveFailures,
    last_failure: h.lastFailure ?? null,
    quarantine: h.quarantine ? { since_ms: h.quarantine.sinceMs, reason: h.quarantine.reason } : null,
  };
}
