import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApiDocument } from './openapi.js';
import type { ApiRoute } from './api-route.js';
import { openApiCallTable } from './openapi-tables.js';

describe('openApiCallTable', () => {
  const named = z.object({ ok: z.boolean() });
  const routes: ApiRoute<unknown, 'none'>[] = [
    { method: 'post', path: '/x/send', summary: 's', body: { kind: 'json', schema: z.object({ a: z.string(), b: z.number().optional() }), required: true }, response: named, handler: async () => undefined },
    { method: 'get', path: '/x/file', summary: 'f', produces: 'application/octet-stream', handler: async () => undefined },
    { method: 'post', path: '/x/either', summary: 'e', body: { kind: 'json', schema: z.union([z.object({ p: z.string() }), z.object({ q: z.string() })]) as unknown as z.ZodObject, required: true }, response: named, handler: async () => undefined },
    { method: 'get', path: '/y/other', summary: 'o', response: named, handler: async () => undefined },
  ];
  const doc = buildOpenApiDocument(routes, { title: 't', version: '1', description: 'd', serverUrl: 'http://t', components: { Ok: named }, security: { schemes: {}, of: () => ({}) } });

  it('gives each call under the prefixes its body and answer fields, optional ones marked, named schemas by name', () => {
    expect(openApiCallTable(doc, ['/x/'])).toBe(
      [
        '| Call | Body | Answer |',
        '|---|---|---|',
        '| POST /x/send | `a`, `b`? | Ok: `ok` |',
        '| GET /x/file | none | application/octet-stream |',
        '| POST /x/either | (`p`) or (`q`) | Ok: `ok` |',
      ].join('\n'),
    );
  });
});
