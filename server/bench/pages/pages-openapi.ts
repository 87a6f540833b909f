import { z } from 'zod';
import { waitlistFormSchema, waitlistJoinedSchema } from './waitlist-schema.js';

/**
 * OpenAPI 3.1 path items for the routes of the pages router, to be merged into the service's
 * `/openapi.json` by whoever builds it. The 422 answer refers to the FastAPI-named component
 * `#/components/schemas/HTTPValidationError`, which that document defines.
 */

type JsonObject = Record<string, unknown>;

const detailSchema: JsonObject = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
};

function strip(schema: JsonObject): JsonObject {
  // Fragments embedded in a larger document carry no $schema of their own.
  const { $schema: _drop, ...rest } = schema;
  return rest;
}

function plainError(description: string): JsonObject {
  return { description, content: { 'application/json': { schema: detailSchema } } };
}

function page(summary: string, contentType: string, description: string): JsonObject {
  return {
    get: {
      tags: ['pages'],
      summary,
      operationId: `pages_${summary.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
      responses: { '200': { description, content: { [contentType]: { schema: { type: 'string' } } } } },
    },
  };
}

/** One console operation: cookie-signed (no API credential), its success answer and its error statuses. */
function consoleOp(summary: string, success: [status: number, contentType: string, description: string], errors: Record<number, string>): JsonObject {
  const responses: JsonObject = { [String(success[0])]: { description: success[2], content: { [success[1]]: { schema: { type: 'string' } } } } };
  for (const [status, description] of Object.entries(errors)) responses[status] = status === '303' ? { description, content: { 'text/html': { schema: { type: 'string' } } } } : plainError(description);
  return { tags: ['console'], summary, description: 'The operator console (docs/pages.md): signed in with the administrator token, then a SameSite=Strict cookie.', operationId: `console_${summary.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '')}`, responses };
}

/** Path items of the operator console (server/bench/pages/console-router.ts). */
export function consoleOpenApiPaths(): Record<string, JsonObject> {
  const toSignIn = { 303: 'Not signed in: to /console/sign-in' };
  const formErrors = { 403: 'The form\'s CSRF token is missing or expired', 413: 'The form is too large', 500: 'Internal Server Error' };
  return {
    '/console': { get: consoleOp('Console', [200, 'text/html', 'Every job, the boards, quarantined boards with a release button'], { ...toSignIn, 500: 'Internal Server Error' }) },
    '/console/sign-in': {
      get: consoleOp('Sign-in page', [200, 'text/html', 'The sign-in form'], {}),
      post: consoleOp('Sign in', [303, 'text/html', 'Signed in: the session cookie is set, to /console'], { 401: 'Not the administrator token (the form again)', ...formErrors }),
    },
    '/console/sign-out': { post: consoleOp('Sign out', [303, 'text/html', 'The cookie is cleared, to /console/sign-in'], formErrors) },
    '/console/jobs/{job_id}': { get: consoleOp('Job page', [200, 'text/html', 'Firmware, timings, outcome and UART, live while it runs'], { ...toSignIn, 404: 'No such job', 500: 'Internal Server Error' }) },
    '/console/jobs/{job_id}/uart': {
      get: consoleOp('Job UART stream', [200, 'text/event-stream', 'The UART as Server-Sent Events, as GET /api/v1/jobs/{job_id}/uart'], { 401: 'Not signed in', 404: 'No such job', 500: 'Internal Server Error' }),
    },
    '/console/boards/{board}': { get: consoleOp('Board page', [200, 'text/html', 'Recent jobs and pass rate'], { ...toSignIn, 500: 'Internal Server Error' }) },
    '/console/boards/{board}/release': {
      post: consoleOp('Release a board', [303, 'text/html', 'Released, to /console'], { 401: 'Not signed in', 404: 'No such board', 409: 'The board keeps no health', ...formErrors }),
    },
  };
}

/** Path items keyed by path, for every route in PAGES_ROUTES. */
export function pagesOpenApiPaths(): Record<string, JsonObject> {
  return {
    '/': page('Bench status page', 'text/html', 'Boards with live status, recent activity, how to connect, the waitlist form.'),
    '/stats': page('Statistics page', 'text/html', 'Totals, jobs by state, boards, recent activity.'),
    '/live/home': {
      get: {
        tags: ['pages'],
        summary: "The home page's live parts",
        description: 'The boards table and recent activity as the home page renders them (escaped HTML by element id), which its script swaps in every 2 s.',
        operationId: 'pages_live_home',
        responses: { '200': { description: 'Element id to HTML.', content: { 'application/json': { schema: { type: 'object', additionalProperties: { type: 'string' } } } } } },
      },
    },
    '/llms.txt': page('llms.txt', 'text/plain', 'llmstxt.org summary of the service for language models (served as text/plain).'),
    '/robots.txt': page('robots.txt', 'text/plain', 'Crawler rules (served as text/plain).'),
    '/.well-known/ai-plugin.json': {
      get: {
        tags: ['pages'],
        summary: 'Plugin manifest',
        operationId: 'pages_ai_plugin_manifest',
        responses: { '200': { description: 'ai-plugin.json, schema v1.', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
    '/logo.png': page('Logo', 'image/png', 'The logo named by the plugin manifest.'),
    '/examples/{board}/hello.elf': {
      get: {
        tags: ['pages'],
        summary: "A board's example firmware",
        description: "The hello-world ELF this bench ships for the board (it prints its banner, then a tick every 100 ms): a first run needs no file of one's own.",
        operationId: 'pages_example_firmware',
        parameters: [{ name: 'board', in: 'path', required: true, schema: { type: 'string', title: 'Board' } }],
        responses: {
          '200': { description: 'The ELF file.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
          '404': plainError('No such board, or it ships no example.'),
        },
      },
    },
    '/api/v1/waitlist': {
      post: {
        tags: ['waitlist'],
        summary: 'Join the waitlist',
        operationId: 'join_waitlist',
        requestBody: {
          required: false,
          content: { 'application/x-www-form-urlencoded': { schema: strip(z.toJSONSchema(waitlistFormSchema, { io: 'input' })) } },
        },
        responses: {
          '200': {
            description: 'Joined, or already on the list (the answer is the same).',
            content: { 'application/json': { schema: strip(z.toJSONSchema(waitlistJoinedSchema)) } },
          },
          '303': { description: 'Joined, for a browser form post (Accept: text/html): back to /?joined=1.' },
          '400': plainError('The body could not be parsed (not UTF-8).'),
          '403': plainError('CSRF token missing, invalid or expired, or a cross-site browser post: reload / and submit again; or the operator turned the waitlist off (--no-waitlist).'),
          '413': plainError('Form body over 16 KiB.'),
          '415': plainError('Not application/x-www-form-urlencoded UTF-8.'),
          '422': {
            description: 'Validation Error',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/HTTPValidationError' } } },
          },
          // Answered by the service's rate limit in front of this router, not by the router itself.
          '429': plainError('Too many sign-ups from the client\'s address (waitlistJoinsPerMinute a minute; Retry-After); a browser gets a short HTML page.'),
        },
      },
    },
  };
}
