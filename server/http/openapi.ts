import { z } from 'zod';
import type { ApiRoute } from './api-route.js';
import { pathParams } from './api-route.js';

/** FastAPI's `ValidationError` component, as a zod schema (the single source here too). */
export const validationErrorSchema = z
  .object({
    loc: z.array(z.union([z.string(), z.number().int()])).meta({ title: 'Location' }),
    msg: z.string().meta({ title: 'Message' }),
    type: z.string().meta({ title: 'Error Type' }),
    input: z.unknown().optional().meta({ title: 'Input' }),
    ctx: z.record(z.string(), z.unknown()).optional().meta({ title: 'Context' }),
  })
  .meta({ title: 'ValidationError' });

export const httpValidationErrorSchema = z
  .object({ detail: z.array(validationErrorSchema).optional().meta({ title: 'Detail' }) })
  .meta({ title: 'HTTPValidationError' });

/** Every other error body: `{"detail": "<message>"}`. */
export const errorDetailSchema = z.object({ detail: z.string().meta({ title: 'Detail' }) }).meta({ title: 'ErrorDetail' });

type JsonSchema = Record<string, unknown>;

/** A JSON Schema for use inside an OpenAPI 3.1 document (no `$schema` / `$id` of its own). */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', refs: Map<z.ZodType, string>): JsonSchema {
  const out = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    override: (ctx) => {
      const current = ctx.zodSchema as unknown as z.ZodType;
      const ref = refs.get(current);
      if (ref && current !== schema) {
        for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[key];
        (ctx.jsonSchema as JsonSchema).$ref = `#/components/schemas/${ref}`;
      }
    },
  }) as JsonSchema;
  delete out.$schema;
  delete out.$id;
  return out;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
  serverUrl: string;
  /** Named response schemas, put under `components.schemas` and referenced from routes. */
  components: Record<string, z.ZodType>;
  /** Path items served by others (the pages router), merged in as they are. */
  extraPaths?: Record<string, Record<string, unknown>>;
}

/** Builds the OpenAPI 3.1 document of `routes`. */
export function buildOpenApiDocument<Agent>(routes: readonly ApiRoute<Agent>[], info: OpenApiInfo): JsonSchema {
  const named: Record<string, z.ZodType> = {
    ...info.components,
    HTTPValidationError: httpValidationErrorSchema,
    ValidationError: validationErrorSchema,
    ErrorDetail: errorDetailSchema,
  };
  const refs = new Map<z.ZodType, string>(Object.entries(named).map(([name, schema]) => [schema, name]));
  const ref = (schema: z.ZodType) => {
    const name = refs.get(schema);
    return name ? { $ref: `#/components/schemas/${name}` } : jsonSchema(schema, 'output', refs);
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const [p, item] of Object.entries(info.extraPaths ?? {})) paths[p] = { ...item };
  for (const route of routes) {
    const parameters: unknown[] = pathParams(route.path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string', title: name === 'sid' ? 'Sid' : 'Job Id' },
    }));
    if (route.query) {
      const query = jsonSchema(route.query, 'input', refs) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({ name, in: 'query', required: (query.required ?? []).includes(name), schema });
      }
    }
    // The spec marks both headers optional in the schema; a missing one is a 401, not a 422.
    if (route.auth === 'bearer') parameters.push({ name: 'authorization', in: 'header', required: false, schema: { type: 'string', title: 'Authorization' } });
    if (route.auth === 'admin') parameters.push({ name: 'x-admin-token', in: 'header', required: false, schema: { type: 'string', title: 'X-Admin-Token' } });

    const responses: Record<string, unknown> = {
      '200': {
        description: 'Successful Response',
        content: route.produces ? { [route.produces]: { schema: { type: 'string', format: 'binary' } } } : { 'application/json': { schema: ref(route.response) } },
      },
    };
    const errors: Record<number, string> = { ...route.errors };
    if (route.body || route.query) errors[422] ??= 'Validation Error';
    for (const [status, description] of Object.entries(errors).sort(([a], [b]) => Number(a) - Number(b))) {
      const schema = status === '422' ? { $ref: '#/components/schemas/HTTPValidationError' } : { $ref: '#/components/schemas/ErrorDetail' };
      responses[status] = { description, content: { 'application/json': { schema } } };
    }

    const operation: Record<string, unknown> = {
      tags: route.tags,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      operationId: route.operationId,
      ...(parameters.length > 0 ? { parameters } : {}),
    };
    if (route.body) {
      const mediaTypes =
        route.body.kind === 'json'
          ? ['application/json']
          : route.body.kind === 'multipart'
            ? ['multipart/form-data']
            : ['application/x-www-form-urlencoded', 'multipart/form-data'];
      const schema = jsonSchema(route.body.schema, 'input', refs);
      operation.requestBody = {
        required: route.body.required,
        content: Object.fromEntries(mediaTypes.map((m) => [m, { schema }])),
      };
    }
    operation.responses = responses;
    if (route.auth === 'bearer') operation.security = [{ HTTPBearer: [] }];
    if (route.auth === 'admin') operation.security = [{ AdminToken: [] }];
    if (route.auth === 'worker') operation.security = [{ WorkerToken: [] }];
    (paths[route.path] ??= {})[route.method] = operation;
  }

  const schemas = Object.fromEntries(Object.entries(named).map(([name, schema]) => [name, jsonSchema(schema, 'output', refs)]));
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        HTTPBearer: { type: 'http', scheme: 'bearer', description: 'An agent token from POST /api/v1/agents/register: `authorization: Bearer hb_...`.' },
        AdminToken: { type: 'apiKey', in: 'header', name: 'x-admin-token', description: 'The administrator token the server was started with.' },
        WorkerToken: { type: 'http', scheme: 'bearer', description: 'A bench worker token from POST /admin/workers: `authorization: Bearer hbw_...` (docs/worker-protocol.md).' },
      },
    },
  };
}
