import type { IncomingMessage } from 'node:http';
import { pathParam } from '../../http/api-route.js';
import { parseForm } from '../../http/form-schema.js';
import { formRefusedFromHeaders, parseFormBody } from '../../http/parse-form.js';
import { type BenchRoute, callerAgent } from './bench-route.js';
import type { Bench } from '../domain/bench.js';
import { mapBenchErrors } from './bench-error-http.js';
import { jobSchema } from '../../../wire/bench/bench-schemas.js';
import { boardQueueSchema } from '../../../wire/bench/job-answer-schemas.js';
import { cancelFormSchema } from '../../../wire/bench/job-request-schemas.js';
import { CANCEL_WAIT_MS } from '../domain/job-cancel.js';
import { jobBody } from '../views/bench-views.js';
import { boardQueueBody } from '../views/board-views.js';

/** A cancel request's form is one short reason: far below the bench's form limit. */
const CANCEL_FORM_MAX_BYTES = 4 * 1024;

const ERRORS = {
  500: 'Internal Server Error (unexpected; logged on the server)',
  401: 'Missing, malformed or unknown bearer token (with WWW-Authenticate: Bearer)',
};

/**
 * The first-hour extensions (issue 31): cancelling a job once its verdict is known (decision
 * 0535), and a board's session queue as its waiters see it (decision 0536). Documented in
 * docs/bench-api.md, "Cancel a job" and "Waiting for a board".
 */
export function cancelAndQueueRoutes(bench: Bench): BenchRoute[] {
  const routes: BenchRoute[] = [
    {
      method: 'post',
      path: '/api/v1/jobs/{job_id}/cancel',
      operationId: 'cancelJob',
      summary: "Extension: stop the caller's job now; it ends failed with kind cancelled, keeping the UART it captured, and frees its board",
      description:
        `Idempotent: a finished job (done, failed, already cancelled) is answered as it is. A queued job fails at once; a flashing or running one is stopped ` +
        `by its worker and answered once it ended (or as it is, still stopping, after ${CANCEL_WAIT_MS / 1000} s).`,
      tags: ['jobs'],
      auth: 'bearer',
      body: { kind: 'form', schema: cancelFormSchema, required: false },
      response: jobSchema,
      errors: {
        ...ERRORS,
        400: 'Malformed body: "There was an error parsing the body: ..." (or the client closed the connection mid-body)',
        404: 'No such job of the caller',
        413: 'Form body over the limit',
        415: 'Body is not a form',
      },
      beforeContinue: async (req: IncomingMessage) => {
        const refused = formRefusedFromHeaders(req, CANCEL_FORM_MAX_BYTES);
        if (refused) throw refused;
      },
      handler: async (req, res, caller) => {
        const agent = callerAgent(caller);
        const body = await parseFormBody(req, { maxBodyBytes: CANCEL_FORM_MAX_BYTES });
        const form = parseForm(cancelFormSchema, body.values);
        const gone = new AbortController();
        res.on('close', () => gone.abort());
        res.json(jobBody(await bench.cancelJob(agent, pathParam(req, 'job_id'), form.reason, gone.signal)));
      },
    },
    {
      method: 'get',
      path: '/api/v1/boards/{board}/queue',
      operationId: 'boardQueue',
      summary: "Extension: the board's session queue (across replicas): how many wait, and the caller's place",
      tags: ['boards'],
      auth: 'bearer',
      response: boardQueueSchema,
      errors: { ...ERRORS, 404: 'Unknown board' },
      handler: async (req, res, caller) => res.json(boardQueueBody(await bench.boardQueue(callerAgent(caller), pathParam(req, 'board')))),
    },
  ];
  return routes.map((route) => ({ ...route, handler: mapBenchErrors(route.handler) }));
}
