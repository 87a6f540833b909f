import type { IncomingMessage } from 'node:http';
import { pathParam } from '../../http/api-route.js';
import { HttpError, parseOr422 } from '../../http/http-error.js';
import { readJsonBody } from '../../http/json-body.js';
import { armAnswerSchema, armBodySchema } from '../../../wire/bench/debug-schemas.js';
import type { Bench } from '../domain/bench.js';
import { mapBenchErrors } from './bench-error-http.js';
import { type BenchRoute, callerAgent } from './bench-route.js';
import { NOT_A_TCP_UPGRADE } from './tcp-upgrade-handshake.js';
import type { DebugRelay } from '../domain/debug-relay.js';

const ERRORS = { 500: 'Internal Server Error (unexpected; logged on the server)', 401: 'Missing, malformed or unknown bearer token (with WWW-Authenticate: Bearer)' };
const BODY_ERRORS = { 400: 'The body ended before it was complete, or its bytes are not UTF-8 (There was an error parsing the body)', 413: 'Body over the limit', 415: 'Body is not JSON' };

/** What a plain GET of a debug stream's path is told: the stream is raw bytes on `Upgrade: tcp` (server/bench/routes/debug-upgrades.ts serves the upgrade). */
// RFC 9110 (15.5.22, 7.8): a 426 names the protocol in `Upgrade`, and `Upgrade` is a connection
// option. `close` too: this answer does not wait for a body the request may still be sending (or,
// sent with `Expect: 100-continue`, never will), and a kept-alive connection would then hang.
const notAnUpgrade = async () => {
  throw new HttpError(426, NOT_A_TCP_UPGRADE, { Upgrade: 'tcp', Connection: 'Upgrade, close' });
};

/**
 * GDB through the bench (issue 32, decisions 0560 and 0910; docs/bench-api.md, "Debugging"): an
 * agent arms its session for debugging and submits the job in it; its debugger's stream and the
 * worker's legs are raw bytes on `Upgrade: tcp` (debug-upgrades.ts), documented here as the GETs they upgrade.
 * Every refusal is a `BenchError` (bench-error-http.ts).
 */
export function debugRoutes(bench: Bench, relay: DebugRelay): BenchRoute[] {
  const routes: BenchRoute[] = [
    {
      method: 'post',
      path: '/api/v1/sessions/{sid}/debug',
      operationId: 'armSessionDebug',
      summary: "Extension: the session's next job is flashed with the core halted at reset and runs under a debugger (issue 32)",
      tags: ['debug'],
      auth: 'bearer',
      body: { kind: 'json', schema: armBodySchema, required: true },
      response: armAnswerSchema,
      errors: { ...ERRORS, ...BODY_ERRORS, 404: 'No such session of the caller', 409: 'The session is not active' },
      handler: async (req, res, caller) => {
        const agent = callerAgent(caller);
        const body = parseOr422(armBodySchema, await readJsonBody(req as IncomingMessage, { maxBodyBytes: 4096 }), 'body');
        const sessionId = pathParam(req, 'sid');
        // Refuses a session that is not the caller's (404) or not active (409), as a heartbeat would, and renews it.
        await bench.heartbeat(agent, sessionId, 'arm a debugger on');
        const terms = await relay.arm(agent.agentId, sessionId, body.idle_timeout_seconds === undefined ? {} : { idleTimeoutMs: body.idle_timeout_seconds * 1000 });
        res.json({ session_id: sessionId, idle_timeout_seconds: terms.idleTimeoutMs / 1000, max_debug_seconds: terms.maxDebugMs / 1000 });
      },
    },
    {
      method: 'get',
      path: '/api/v1/jobs/{job_id}/debug',
      operationId: 'openDebugStream',
      summary: 'Extension: a debug stream on a running debug job, as raw bytes on an HTTP upgrade (one debugger at a time); the core is reset, halted, for it',
      description:
        "Send `Connection: Upgrade` and `Upgrade: tcp`. The server answers 101 once the job's worker has taken the stream (within 10 s), and the connection then carries GDB's remote protocol, raw, both ways. The board checks the debugger's bytes as RSP (broken framing or a packet over 64 KiB closes this stream only); when the board or the server ends a stream, its last bytes are an `E.` reply saying why. Refusals come before the upgrade, as ordinary answers.",
      tags: ['debug'],
      auth: 'bearer',
      successStatus: 101,
      errors: {
        ...ERRORS,
        404: 'No such job of the caller',
        409: 'A debugger is attached already (`debugger_attached`), or the job is queued, finished, asked to stop (its session ended, it was cancelled), or not a debug job (`job_not_debuggable`)',
        426: 'Not an `Upgrade: tcp` request (a plain GET, or a WebSocket upgrade)',
        503: "The job's worker did not take the stream within 10 s (`board_offline`, with Retry-After), or the replica holding the job's streams cannot be reached",
      },
      handler: notAnUpgrade,
    },
    {
      method: 'get',
      path: '/api/v1/worker/jobs/{job_id}/debug',
      operationId: 'workerDebugChannel',
      summary: "A worker's leg for its debug job's next debugger, raw bytes on an HTTP upgrade it dials and the server holds (docs/worker-protocol.md)",
      description: 'Send `Connection: Upgrade` and `Upgrade: tcp`. The server holds the request until a debugger comes (then 101: the connection carries that debugger\'s bytes, raw) or for 30 s (then 204, or 204 at once when a newer leg replaces this one: dial again).',
      tags: ['workers'],
      auth: 'worker',
      successStatus: 101,
      otherSuccess: { 204: 'No debugger came within 30 s, or a newer leg of the same worker replaced this one: dial again (why in `x-hilbench-dial-again`)' },
      errors: {
        500: ERRORS[500],
        401: 'Missing or invalid worker token',
        403: 'Worker revoked',
        404: 'No running debug job of this worker handed out by this server: stop dialling',
        426: 'Not an `Upgrade: tcp` request (a plain GET, or a WebSocket upgrade)',
        503: "The replica holding the job's debug streams cannot be reached from this one (the worker dials again after a back-off)",
      },
      handler: notAnUpgrade,
    },
  ];
  return routes.map((route) => ({ ...route, handler: mapBenchErrors(route.handler) }));
}

