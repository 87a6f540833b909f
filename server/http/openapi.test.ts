import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { ApiRoute } from './api-route.js';
import { buildOpenApiDocument, type OpenApiSecurity } from './openapi.js';

type Auth = 'key';
const security: OpenApiSecurity<Auth> = {
  schemes: { Key: { type: 'apiKey', in: 'header', name: 'x-key' } },
  of: (auth) => (auth === 'key' ? { security: [{ Key: [] }], headers: [{ name: 'x-key', title: 'X-Key' }], errors: { 401: 'no key' }, extensions: { 'x-credential': 'key' } } : {}),
};
const handler = async () => undefined;
const inner = z.object({ n: z.number().int() }).meta({ id: 'Inner' });
const thing = z.object({ name: z.string().max(5), inner }).strict().meta({ id: 'Thing' });
const listed = z.object({ items: z.array(z.string()) });

const routes: ApiRoute<unknown, Auth>[] = [
  { method: 'post', path: '/things', summary: 'make', auth: 'key', since: '1.0', body: { kind: 'json', schema: thing, required: true }, response: thing, successStatus: 201, handler },
  { method: 'get', path: '/things/{thing_id}', summary: 'read', operationId: 'readThing', response: listed, errors: { 404: 'no such thing' }, handler },
  { method: 'get', path: '/search', summary: 'search', query: z.object({ q: z.string(), limit: z.number().optional() }).meta({ id: 'SearchQuery' }), handler },
];
const doc = buildOpenApiDocument(routes, { title: 't', version: '1', description: 'd', serverUrl: 'http://x', components: { Listed: listed }, security }) as {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes: unknown };
};

describe('the one OpenAPI builder of both services', () => {
  it('names schemas given as components or by .meta({ id }), nested ones too, and refers to them', () => {
    const make = doc.paths['/things']!.post!;
    expect(make.requestBody).toEqual({ required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } });
    expect((make.responses as Record<string, unknown>)['201']).toEqual({ description: 'Successful Response', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } });
    expect(doc.components.schemas.Thing).toMatchObject({ additionalProperties: false, properties: { name: { maxLength: 5 }, inner: { $ref: '#/components/schemas/Inner' } } });
    expect(doc.components.schemas.Inner).toMatchObject({ properties: { n: { type: 'integer' } } });
    expect((doc.paths['/things/{thing_id}']!.get!.responses as Record<string, { content: unknown }>)['200']!.content).toEqual({ 'application/json': { schema: { $ref: '#/components/schemas/Listed' } } });
  });

  it("documents the route's credential, version, errors and parameters", () => {
    const make = doc.paths['/things']!.post!;
    expect(make.security).toEqual([{ Key: [] }]);
    expect(make['x-credential']).toBe('key');
    expect(make['x-since']).toBe('1.0');
    expect(make.operationId).toBe('postThings');
    expect(Object.keys(make.responses as object)).toEqual(['201', '401', '422', 'default']);
    expect(make.parameters).toEqual([{ name: 'x-key', in: 'header', required: false, schema: { type: 'string', title: 'X-Key' } }]);
    const read = doc.paths['/things/{thing_id}']!.get!;
    expect(read.operationId).toBe('readThing');
    expect(Object.keys(read.responses as object)).toEqual(['200', '404']);
    expect(read.parameters).toEqual([{ name: 'thing_id', in: 'path', required: true, schema: { type: 'string', title: 'Thing Id' } }]);
    const search = doc.paths['/search']!.get!;
    expect((search.parameters as { name: string; required: boolean }[]).map((p) => [p.name, p.required])).toEqual([['q', true], ['limit', false]]);
  });

  it('every $ref points at a component that exists', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    for (const ref of new Set(refs)) expect(doc.components.schemas[ref], ref).toBeDefined();
  });
});
