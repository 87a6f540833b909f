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
          '403': plainError('CSRF token missing, invalid or expired, or a cross-site browser post: reload / and submit again.'),
          '413': plainError('Form body over 16 KiB.'),
          '415': plainError('Not application/x-www-form-urlencoded UTF-8.'),
          '422': {
            description: 'Validation Error',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/HTTPValidationError' } } },
          },
        },
      },
    },
  };
}
