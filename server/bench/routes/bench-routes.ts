import { sameSecret } from '../../http/same-secret.js';
import { jobOrTextSchema } from '../../../wire/bench/job-answer-schemas.js';
import { cancelAndQueueRoutes } from './cancel-and-queue-routes.js';
import type { IncomingMessage } from 'node:http';
import { pathParam } from '../../http/api-route.js';
import { type BenchRoute, callerAgent, type RouteGuards } from './bench-route.js';
import { parseForm } from '../../http/form-schema.js';
import { HttpError } from '../../http/http-error.js';
import { formRefusedFromHeaders, parseFormBody } from '../../http/parse-form.js';
import type { AgentRecord } from '../../storage/bench/bench-store.js';
import type { Bench } from '../domain/bench.js';
import { mapBenchErrors } from './bench-error-http.js';
import { getJobMaybeWaiting, jobLiveRoutes, LONG_POLLS_429 } from './job-live-routes.js';
import { jobWaitQuerySchema } from '../../../wire/bench/job-request-schemas.js';
import type { BenchLimits } from '../domain/bench-limits.js';
import { agentRegistrationBody, jobBody, serviceHealthBody, sessionBody } from '../views/bench-views.js';
import { benchSnapshot } from '../views/bench-snapshot.js';
import { adminBody, boardBody, statsBody } from '../views/board-views.js';
import { boardHealthCheckBody, boardReleaseBody } from '../views/board-health-views.js';
import {
  adminSchema,
  agentRegistrationSchema,
  boardHealthCheckSchema,
  boardListSchema,
  boardReleaseSchema,
  buildFormSchemas,
  healthSchema,
  jobSchema,
  sessionSchema,
  statsSchema,
} from '../../../wire/bench/bench-schemas.js';

/** Multipart framing and the small text fields of a flash upload, on top of the firmware. */
const FLASH_FORM_OVERHEAD_BYTES = 64 * 1024;

const ADMIN_ERRORS = { 401: 'Missing or wrong x-admin-token', 403: 'Admin disabled (no admin token configured)' };

const AUTH_ERRORS = { 401: 'Missing, malformed or unknown bearer token (with WWW-Authenticate: Bearer)' };

/** Every route: a bug answers FastAPI's generic 500 (the cause is logged, never sent). */
const GENERIC_ERRORS = { 500: 'Internal Server Error (unexpected; logged on the server)' };

/** Routes with a form body: a body that is not well-formed multipart/urlencoded, or was cut short. */
const BODY_ERRORS = { ...GENERIC_ERRORS, 400: 'Malformed body: "There was an error parsing the body: ..." (or the client closed the connection mid-body)' };

/**
 * Compares the `x-admin-token` header with the configured token in constant time (both hashed
 * first, so neither the content nor the length leaks through timing).
 */
function checkAdmin(req: IncomingMessage, adminToken: string | undefined): void {
  if (adminToken === undefined || adminToken === '') {
    throw new HttpError(403, 'admin is disabled: start the server with --admin-token or HILBENCH_ADMIN_TOKEN');
  }
  const given = req.headers['x-admin-token'];
  if (typeof given !== 'string' || given === '') throw new HttpError(401, 'admin token required: send it in the x-admin-token header');
  if (!sameSecret(given, adminToken)) throw new HttpError(401, 'wrong admin token');
}

/** How the router checks the bench's two credentials (`ApiRoute.auth`). */
export function benchGuards(bench: Bench, options: { adminToken?: string }): RouteGuards<AgentRecord> {
  return {
    // The edge: a refused token is a `BenchError`, answered here as its 401.
    bearer: mapBenchErrors((req: IncomingMessage) => bench.authenticate(req.headers.authorization)),
    admin: (req) => checkAdmin(req, options.adminToken),
  };
}

/**
 * Every JSON endpoint of the bench API, described once (served and documented from this). The
 * edge of the bench: each handler's `BenchError`s become their HTTP answers here
 * (`bench-error-http.ts`), so the domain never picks a status.
 */
export function benchRoutes(bench: Bench, options: { limits: BenchLimits }): BenchRoute[] {
  return [...benchRouteTable(bench, options).map((route) => ({ ...route, handler: mapBenchErrors(route.handler) })), ...jobLiveRoutes(bench), ...cancelAndQueueRoutes(bench)];
}

function benchRouteTable(bench: Bench, options: { limits: BenchLimits }): BenchRoute[] {
  const { limits } = options;
  const forms = buildFormSchemas(limits);
  /** The check a body route makes from its headers after auth (which the router makes first). */
  const headersCheck = (options: { maxBodyBytes: number }) => async (req: IncomingMessage) => {
    const refused = formRefusedFromHeaders(req, options.maxBodyBytes);
    if (refused) throw refused;
  };
  const flashBodyBytes = limits.maxFirmwareBytes + FLASH_FORM_OVERHEAD_BYTES;

  return [
    {
      method: 'get',
      path: '/api/v1/health',
      operationId: 'health',
      summary: 'Service health',
      description: 'ok when the database answers, the data directory\'s disk is not full and at least one board can run; degraded otherwise.',
      tags: ['status'],
      response: healthSchema,
      errors: { ...GENERIC_ERRORS },
      handler: async (_req, res) => res.json(serviceHealthBody(await bench.health())),
    },
    {
      method: 'get',
      path: '/api/v1/boards',
      operationId: 'listBoards',
      summary: 'Boards, their MCU, backend and status (free, leased, busy, offline)',
      tags: ['boards'],
      response: boardListSchema,
      errors: { ...GENERIC_ERRORS },
      handler: async (_req, res) => res.json({ boards: (await bench.listBoards()).map(boardBody) }),
    },
    {
      method: 'get',
      path: '/api/v1/stats',
      operationId: 'stats',
      summary: 'Public statistics (the data of the /stats page)',
      tags: ['status'],
      response: statsSchema,
      errors: { ...GENERIC_ERRORS },
      handler: async (_req, res) => res.json(statsBody(benchSnapshot(await bench.overview()))),
    },
    {
      method: 'post',
      path: '/api/v1/agents/register',
      operationId: 'registerAgent',
      summary: 'Register an agent and receive its bearer token (shown once)',
      tags: ['agents'],
      body: { kind: 'form', schema: forms.agentRegister, required: false },
      response: agentRegistrationSchema,
      // 429 comes from the rate limit mounted before the routes (bench-service.ts), not from the handler.
      errors: {
        ...BODY_ERRORS,
        413: 'Form body over the limit',
        415: 'Body is not a form',
        429: `More than ${limits.agentRegistrationsPerMinute} registrations a minute from the client's address (Retry-After)`,
      },
      beforeContinue: headersCheck({ maxBodyBytes: limits.maxFormBodyBytes }),
      handler: async (req, res) => {
        const body = await parseFormBody(req, { maxBodyBytes: limits.maxFormBodyBytes });
        const form = parseForm(forms.agentRegister, body.values);
        res.json(agentRegistrationBody(await bench.registerAgent(form.label)));
      },
    },
    {
      method: 'post',
      path: '/api/v1/sessions',
      operationId: 'openSession',
      summary: 'Open an exclusive lease on a board, kept alive by heartbeats',
      tags: ['sessions'],
      auth: 'bearer',
      body: { kind: 'form', schema: forms.sessionOpen, required: true },
      response: sessionSchema,
      errors: {
        ...BODY_ERRORS,
        ...AUTH_ERRORS,
        404: 'Unknown board',
        409: "Board leased or busy (by whom, until when; Retry-After), already leased by the caller, or, with wait_seconds, the wait ran out (the detail gives the caller's place in the queue)",
        413: 'Form body over the limit',
        429: `With wait_seconds: ${LONG_POLLS_429}`,
        415: 'Body is not a form',
        503: 'Board offline (with the reason)',
      },
      beforeContinue: headersCheck({ maxBodyBytes: limits.maxFormBodyBytes }),
      handler: async (req, res, caller) => {
        const agent = callerAgent(caller);
        const body = await parseFormBody(req, { maxBodyBytes: limits.maxFormBodyBytes });
        // No body at all is validated like an empty form: one `missing` per required field, as
        // FastAPI answers a form endpoint (issue 9), not one error on ["body"].
        const form = parseForm(forms.sessionOpen, body.values);
        const gone = new AbortController();
        // The client's FIN (its socket's end) is the first sign it left: the answer's close comes
        // only once our side has closed too, after a grant that would then hold the board unused.
        const clientLeft = () => gone.abort();
        req.socket.once('end', clientLeft);
        res.on('close', () => {
          req.socket.off('end', clientLeft);
          gone.abort();
        });
        // A grant can complete in the event-loop turn of the event that freed the board (the store's
        // calls resolve without I/O on SQLite), before the I/O already due is read: a client that
        // left just before would be heard only after the answer. Two turns let one poll for I/O run
        // before the bench checks `gone` (hostile19's t14: 30 orphans of 30 without).
        const beforeAnswer = async () => {
          for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
        };
        res.json(sessionBody(await bench.openSession(agent, form.board, form.idle_seconds, { seconds: form.wait_seconds, signal: gone.signal, beforeAnswer })));
      },
    },
    {
      method: 'get',
      path: '/api/v1/sessions/{sid}',
      operationId: 'getSession',
      summary: "One of the caller's sessions",
      tags: ['sessions'],
      auth: 'bearer',
      response: sessionSchema,
      errors: { ...GENERIC_ERRORS, ...AUTH_ERRORS, 404: 'No such session of the caller' },
      handler: async (req, res, caller) => res.json(sessionBody(await bench.getSession(callerAgent(caller), pathParam(req, 'sid')))),
    },
    {
      method: 'post',
      path: '/api/v1/sessions/{sid}/heartbeat',
      operationId: 'heartbeatSession',
      summary: 'Extend an active session to now + idle_seconds',
      tags: ['sessions'],
      auth: 'bearer',
      response: sessionSchema,
      errors: { ...GENERIC_ERRORS, ...AUTH_ERRORS, 404: 'No such session of the caller', 409: 'Session not active (names its state)' },
      handler: async (req, res, caller) => res.json(sessionBody(await bench.heartbeat(callerAgent(caller), pathParam(req, 'sid')))),
    },
    {
      method: 'post',
      path: '/api/v1/sessions/{sid}/end',
      operationId: 'endSession',
      summary: 'End an active session and free its board',
      tags: ['sessions'],
      auth: 'bearer',
      response: sessionSchema,
      errors: { ...GENERIC_ERRORS, ...AUTH_ERRORS, 404: 'No such session of the caller', 409: 'Session not active (names its state)' },
      handler: async (req, res, caller) => res.json(sessionBody(await bench.endSession(callerAgent(caller), pathParam(req, 'sid')))),
    },
    {
      method: 'post',
      path: '/api/v1/jobs/flash',
      operationId: 'flashJob',
      summary: 'Upload an ELF, flash it on a board and capture its UART; answers at once with the queued job',
      tags: ['jobs'],
      auth: 'bearer',
      body: { kind: 'multipart', schema: forms.flashJob, required: true },
      response: jobSchema,
      errors: {
        ...BODY_ERRORS,
        ...AUTH_ERRORS,
        404: 'Unknown board, or no such session of the caller',
        409: 'Board leased by someone else, or the session is not active / on another board',
        413: `Firmware over ${limits.maxFirmwareBytes} bytes (refused while streaming)`,
        415: 'Body is not multipart/form-data',
        429: `More than ${limits.maxQueuedJobsPerBoard} jobs waiting on the board (Retry-After)`,
        503: 'Board offline (with the reason)',
      },
      beforeContinue: headersCheck({ maxBodyBytes: flashBodyBytes }),
      handler: async (req, res, caller) => {
        const agent = callerAgent(caller);
        const body = await parseFormBody(req, {
          maxBodyBytes: flashBodyBytes,
          maxFileBytes: limits.maxFirmwareBytes,
          fileFields: ['firmware'],
        });
        // No body: one `missing` per required field (see openSession).
        const form = parseForm(forms.flashJob, body.values);
        res.json(jobBody(await bench.submitFlash(agent, { board: form.board, firmware: form.firmware, uartSeconds: form.uart_seconds, session: form.session })));
      },
    },
    {
      method: 'get',
      path: '/api/v1/jobs/{job_id}',
      operationId: 'getJob',
      summary: "One of the caller's jobs: state, UART capture, stop reason or failure",
      tags: ['jobs'],
      auth: 'bearer',
      query: jobWaitQuerySchema,
      // `?uart=text` / `?max_chars=` answer the UART as (cut) text (job-text-view.ts).
      response: jobOrTextSchema,
      errors: { ...GENERIC_ERRORS, ...AUTH_ERRORS, 404: 'No such job of the caller', 429: LONG_POLLS_429 },
      handler: getJobMaybeWaiting(bench),
    },
    {
      method: 'get',
      path: '/admin',
      operationId: 'admin',
      summary: 'Operator view: leases, board health (failures, quarantine), open sessions with agents, recent jobs and failures, counts',
      tags: ['admin'],
      auth: 'admin',
      response: adminSchema,
      errors: { ...GENERIC_ERRORS, ...ADMIN_ERRORS },
      handler: async (_req, res) => res.json(adminBody(await bench.admin())),
    },
    {
      method: 'post',
      path: '/admin/boards/{board}/release',
      operationId: 'releaseBoard',
      summary: 'Put a quarantined board back in service (clears its quarantine and failure count)',
      description: 'Idempotent: releasing a healthy board resets its failure count. The answer carries the status from a fresh availability check.',
      tags: ['admin'],
      auth: 'admin',
      response: boardReleaseSchema,
      errors: { ...GENERIC_ERRORS, ...ADMIN_ERRORS, 404: 'Unknown board', 409: "The board's backend keeps no board health (it never quarantines boards)" },
      handler: async (req, res) => res.json(boardReleaseBody(await bench.releaseBoard(pathParam(req, 'board')))),
    },
    {
      method: 'post',
      path: '/admin/boards/{board}/health-check',
      operationId: 'healthCheckBoard',
      summary: "Run the board's health-check firmware; passing releases the board",
      description:
        'Answers when the check has finished (bounded by the health-check timeout): 200 with passed true or false. While it runs the board refuses sessions and jobs with 409.',
      tags: ['admin'],
      auth: 'admin',
      response: boardHealthCheckSchema,
      errors: {
        ...GENERIC_ERRORS,
        ...ADMIN_ERRORS,
        404: 'Unknown board',
        409: 'No health check for this board (backend without one, or none configured), the board is leased or has jobs, or a check is already running',
      },
      handler: async (req, res) => res.json(boardHealthCheckBody(await bench.healthCheckBoard(pathParam(req, 'board')))),
    },
  ];
}
