import { z } from 'zod';
import type { Request, Response } from 'express';
import { pathParam } from '../../http/api-route.js';
import { type BenchRoute, callerAgent, type RouteCaller } from './bench-route.js';
import { fieldValueError } from '../../http/http-error.js';
import { readJsonBody } from '../../http/json-body.js';
import { lastQueryValues } from '../../http/query-values.js';
import { parseOr422 } from '../../http/http-error.js';
import type { AgentRecord } from '../../storage/bench/bench-store.js';
import type { Bench } from '../domain/bench.js';
import { mapBenchErrors } from './bench-error-http.js';
import { answerUartEventStream } from './uart-event-stream.js';
import { jobView } from '../views/job-text-view.js';
import { jobBody } from '../views/bench-views.js';
import { uartInputAnswerSchema } from '../../../wire/bench/job-answer-schemas.js';
import { MAX_UART_INPUT_BYTES, jobWaitQuerySchema, uartInputSchema } from '../../../wire/bench/job-request-schemas.js';

/** The 429 of a route that holds the request open (decision 0471). */
export const LONG_POLLS_429 = 'The caller already holds maxLongPollsPerAgent long polls (job ?wait=, UART streams, serial input, session queues) on this server (Retry-After)';
const ERRORS = {
  500: 'Internal Server Error (unexpected; logged on the server)',
  401: 'Missing, malformed or unknown bearer token (with WWW-Authenticate: Bearer)',
  404: 'No such job of the caller',
};

/** Aborted when the client goes away before its answer is complete. */
function clientGone(res: Response): AbortSignal {
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  return gone.signal;
}

/**
 * Results as they happen (issue 11, extensions beside the 0.3.4 endpoints): the job endpoint's
 * `?wait=`, the UART as Server-Sent Events, and serial input for a running job. The SSE format is
 * in docs/bench-api.md, "Live UART".
 */
export function jobLiveRoutes(bench: Bench): BenchRoute[] {
  const routes: BenchRoute[] = [
    {
      method: 'get',
      path: '/api/v1/jobs/{job_id}/uart',
      operationId: 'streamJobUart',
      summary: "Extension: the job's UART as Server-Sent Events, from the first byte, resumable with Last-Event-ID, closed by an `end` event with the job",
      tags: ['jobs'],
      auth: 'bearer',
      response: z.string().meta({ description: 'text/event-stream: `uart` events (id = byte offset after the chunk) then one `end` event.' }),
      produces: 'text/event-stream',
      errors: { ...ERRORS, 429: LONG_POLLS_429 },
      handler: (req, res, caller) => answerUartEventStream(req, res, (options) => bench.streamJobUart(callerAgent(caller), pathParam(req, 'job_id'), options)),
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{job_id}/uart',
      operationId: 'writeJobUart',
      summary: "Extension: bytes to the running firmware's serial input, wherever its worker runs (409 when the job is not running)",
      tags: ['jobs'],
      auth: 'bearer',
      body: { kind: 'json', schema: uartInputSchema as unknown as z.ZodObject, required: true },
      response: uartInputAnswerSchema,
      errors: {
        ...ERRORS,
        400: 'The body ended before it was complete, or its bytes are not UTF-8 (There was an error parsing the body)',
        409: 'The job is not flashing or running (queued, done, failed)',
        413: 'Body over the limit',
        415: 'Body is not JSON',
        429: `Too much of the job’s serial input waits for its worker, or: ${LONG_POLLS_429}`,
      },
      handler: async (req, res, caller) => {
        const body = parseOr422(uartInputSchema, await readJsonBody(req, { maxBodyBytes: 16 * 1024 }), 'body');
        const bytes = body.text !== undefined ? new TextEncoder().encode(body.text) : new Uint8Array(Buffer.from(body.base64!, 'base64'));
        // The schema bounds characters; UTF-8 text or base64 padding can still carry more bytes.
        if (bytes.length > MAX_UART_INPUT_BYTES) {
          const field = body.text !== undefined ? 'text' : 'base64';
          throw fieldValueError(field, `the input is ${bytes.length} bytes; at most ${MAX_UART_INPUT_BYTES} bytes per request`, body[field]);
        }
        const jobId = pathParam(req, 'job_id');
        const receipt = await bench.writeJobUart(callerAgent(caller), jobId, bytes, clientGone(res));
        res.json({
          job_id: jobId,
          accepted_bytes: bytes.length,
          input_seq: receipt.seq,
          delivery: receipt.delivery,
          written_bytes: receipt.delivery === 'written' ? bytes.length : 0,
        });
      },
    },
  ];
  return routes.map((route) => ({ ...route, handler: mapBenchErrors(route.handler) }));
}

/** The `GET /api/v1/jobs/{job_id}` handler with `?wait=` (the route itself stays in bench-routes.ts). */
export function getJobMaybeWaiting(bench: Bench) {
  return async (req: Request, res: Response, caller: RouteCaller<AgentRecord>): Promise<void> => {
    const { wait, ...view } = parseOr422(jobWaitQuerySchema, lastQueryValues(req.query), 'query');
    const agent = callerAgent(caller);
    const jobId = pathParam(req, 'job_id');
    res.json(jobView(jobBody(wait === undefined ? await bench.getJob(agent, jobId) : await bench.waitForJob(agent, jobId, wait, clientGone(res))), view));
  };
}

