import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { z } from 'zod';
import { pathParam } from '../http/api-route.js';
import { HttpError } from '../http/http-error.js';
import { readJsonBody } from '../http/json-body.js';
import { parseOr422 } from '../http/http-error.js';
import { armAnswerSchema, armBodySchema, receiveAnswerSchema, receiveBodySchema, sendBodySchema, streamOpenedSchema } from '../../wire/bench/debug-schemas.js';
import { workerEventsAnswerSchema, workerEventsBodySchema, workerSendBodySchema } from '../../wire/worker/debug-schemas.js';
import { okAnswerSchema as okSchema } from '../../wire/worker/worker-schemas.js';
import type { Bench } from './bench.js';
import { mapBenchErrors } from './bench-error-http.js';
import { type BenchRoute, callerAgent } from './bench-route.js';
import type { DebugRelay } from './debug-relay.js';
import { workerOf } from './worker-routes.js';

/** A debug request's JSON body: a 64 KiB packet in base64 and its framing fit well within it. */
const MAX_DEBUG_BODY_BYTES = 256 * 1024;

const ERRORS = { 500: 'Internal Server Error (unexpected; logged on the server)', 401: 'Missing, malformed or unknown bearer token (with WWW-Authenticate: Bearer)' };
const BODY_ERRORS = { 400: 'The body ended before it was complete', 413: 'Body over the limit', 415: 'Body is not JSON' };
const STREAM_ERRORS = { ...ERRORS, ...BODY_ERRORS, 404: 'No such job of the caller', 409: 'The stream is closed (`debug_stream_closed`), or the job is not a running debug job' };
const WORKER_ERRORS = { 500: ERRORS[500], 401: 'Missing or invalid worker token', 403: 'Worker revoked', 404: 'No such job among this worker’s', ...BODY_ERRORS };

const readBody = async <T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<T> => parseOr422(schema, await readJsonBody(req, { maxBodyBytes: MAX_DEBUG_BODY_BYTES }), 'body');
const latin1 = (b64: string) => Buffer.from(b64, 'base64').toString('latin1');
const toBase64 = (text: string) => Buffer.from(text, 'latin1').toString('base64');

function clientGone(res: Response): AbortSignal {
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  return gone.signal;
}

/**
 * GDB through the bench (issue 32, decision 0560; docs/bench-api.md, "Debugging"): an agent arms
 * its session for debugging, submits the job in it, and opens one debug stream at a time on that
 * job; the worker of the job long-polls the stream's bytes over its outbound connection. Every
 * refusal is a `BenchError` (bench-error-http.ts).
 */
export function debugRoutes(bench: Bench, relay: DebugRelay): BenchRoute[] {
  const streamPath = (tail = '') => `/api/v1/jobs/{job_id}/debug/{stream_id}${tail}`;
  const agentRoutes: BenchRoute[] = [
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
        const body = await readBody(req, armBodySchema);
        const sessionId = pathParam(req, 'sid');
        // Refuses a session that is not the caller's (404) or not active (409), as a heartbeat would.
        await bench.heartbeat(agent, sessionId);
        const terms = relay.arm(agent.agentId, sessionId, body.idle_timeout_seconds === undefined ? {} : { idleTimeoutMs: body.idle_timeout_seconds * 1000 });
        res.json({ session_id: sessionId, idle_timeout_seconds: terms.idleTimeoutMs / 1000, max_debug_seconds: terms.maxDebugMs / 1000 });
      },
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{job_id}/debug',
      operationId: 'openDebugStream',
      summary: 'Extension: opens a debug stream on a running debug job (one debugger at a time); the core is reset, halted, for it',
      tags: ['debug'],
      auth: 'bearer',
      response: streamOpenedSchema,
      errors: { ...ERRORS, 404: 'No such job of the caller', 409: 'A debugger is attached already (`debugger_attached`), or the job is queued, finished, or not a debug job (`job_not_debuggable`)' },
      handler: async (req, res, caller) => {
        const jobId = pathParam(req, 'job_id');
        const opened = await relay.open(callerAgent(caller).agentId, jobId);
        res.json({ job_id: jobId, stream_id: opened.stream, board: opened.board });
      },
    },
    {
      method: 'post',
      path: streamPath('/send'),
      operationId: 'sendDebugBytes',
      summary: "Extension: the debugger's bytes to the target (broken framing or a packet over 64 KiB closes this stream only)",
      tags: ['debug'],
      auth: 'bearer',
      body: { kind: 'json', schema: sendBodySchema, required: true },
      response: okSchema,
      errors: STREAM_ERRORS,
      handler: async (req, res, caller) => {
        const agentId = callerAgent(caller).agentId;
        const [jobId, streamId] = [pathParam(req, 'job_id'), pathParam(req, 'stream_id')];
        let body: z.infer<typeof sendBodySchema>;
        try {
          body = await readBody(req, sendBodySchema);
        } catch (err) {
          // An oversized or unreadable request closes its stream too: the debugger is not speaking RSP.
          if (err instanceof HttpError) await relay.close(agentId, jobId, streamId).catch(() => undefined);
          throw err;
        }
        await relay.send(agentId, jobId, streamId, latin1(body.base64));
        res.json({ ok: true });
      },
    },
    {
      method: 'post',
      path: streamPath('/receive'),
      operationId: 'receiveDebugBytes',
      summary: "Extension: the target's bytes for the debugger (a long poll), and why the stream closed once it has",
      tags: ['debug'],
      auth: 'bearer',
      body: { kind: 'json', schema: receiveBodySchema, required: true },
      response: receiveAnswerSchema,
      errors: STREAM_ERRORS,
      handler: async (req, res, caller) => {
        const agent = callerAgent(caller);
        const body = await readBody(req, receiveBodySchema);
        const got = await relay.receive(agent.agentId, pathParam(req, 'job_id'), pathParam(req, 'stream_id'), body.wait_seconds * 1000, clientGone(res));
        // The session stays alive while its debugger is attached.
        if (got.sessionDue) await bench.heartbeat(agent, got.sessionDue).catch(() => undefined);
        res.json({ base64: toBase64(got.text), closed: got.closed });
      },
    },
    {
      method: 'post',
      path: streamPath('/close'),
      operationId: 'closeDebugStream',
      summary: 'Extension: the debugger went away; the board waits for another (or ends the job after its idle timeout)',
      tags: ['debug'],
      auth: 'bearer',
      response: okSchema,
      errors: { ...ERRORS, 404: 'No such job of the caller', 409: 'The job is not a debug job here' },
      handler: async (req, res, caller) => {
        await relay.close(callerAgent(caller).agentId, pathParam(req, 'job_id'), pathParam(req, 'stream_id'));
        res.json({ ok: true });
      },
    },
  ];
  const workerRoutes: BenchRoute[] = [
    {
      method: 'post',
      path: '/api/v1/worker/jobs/{job_id}/debug/events',
      operationId: 'workerDebugEvents',
      summary: 'What debuggers did on the worker’s debug job: streams opened, their bytes, streams closed (a long poll)',
      tags: ['workers'],
      auth: 'worker',
      body: { kind: 'json', schema: workerEventsBodySchema, required: true },
      response: workerEventsAnswerSchema,
      errors: WORKER_ERRORS,
      handler: async (req, res, caller) => {
        const body = await readBody(req, workerEventsBodySchema);
        const batch = await relay.events(workerOf(caller).workerId, pathParam(req, 'job_id'), body.wait_seconds * 1000, clientGone(res));
        res.json({
          events: batch.events.map((e) => (e.kind === 'open' ? e : e.kind === 'data' ? { stream: e.stream, kind: e.kind, base64: toBase64(e.text) } : e)),
          ended: batch.ended,
        });
      },
    },
    {
      method: 'post',
      path: '/api/v1/worker/jobs/{job_id}/debug/send',
      operationId: 'workerDebugSend',
      summary: 'The target’s bytes for a debug stream, and/or that the board closed it',
      tags: ['workers'],
      auth: 'worker',
      body: { kind: 'json', schema: workerSendBodySchema, required: true },
      response: okSchema,
      errors: { ...WORKER_ERRORS, 409: 'The worker no longer holds the debug job' },
      handler: async (req, res, caller) => {
        const body = await readBody(req, workerSendBodySchema);
        const jobId = pathParam(req, 'job_id');
        if (!relay.fromTarget(workerOf(caller).workerId, jobId, body.stream, latin1(body.base64), body.closed ?? undefined)) {
          throw new HttpError(409, `debug job ${jobId} is not this worker's (it ended, or was handed out by another server)`);
        }
        res.json({ ok: true });
      },
    },
  ];
  return [...agentRoutes.map((route) => ({ ...route, handler: mapBenchErrors(route.handler) })), ...workerRoutes.map((route) => ({ ...route, handler: mapBenchErrors(route.handler) }))];
}
