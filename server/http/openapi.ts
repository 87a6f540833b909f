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

/** How a service's credentials appear in its document. */
export interface OpenApiSecurity<Auth extends string> {
  /** `components.securitySchemes`. */
  schemes: Record<string, JsonSchema>;
  /**
   * For a route's `auth`: its `security` requirements, the headers to list as (optional)
   * parameters, and the error statuses the credential check itself can answer.
   */
  of(auth: Auth | undefined): { security?: Record<string, string[]>[]; headers?: { name: string; title: string }[]; errors?: Record<number, string>; extensions?: JsonSchema };
}

export interface OpenApiInfo<Auth extends string> {
  title: string;
  version: string;
  description: string;
  serverUrl: string;
  /** Named schemas, put under `components.schemas` and referenced wherever they are used. */
  components?: Record<string, z.ZodType>;
  /** Path items served by others (pages, metrics), merged in as they are. */
  extraPaths?: Record<string, Record<string, unknown>>;
  security: OpenApiSecurity<Auth>;
}

/**
 * The components and reference rules of one document. A schema is named when it is one of
 * `info.components` or carries a zod `.meta({ id })`; every use of a named schema, at the top or
 * nested, becomes a `$ref` to `components.schemas`.
 */
class SchemaBook {
  readonly schemas: Record<string, JsonSchema> = {};
  private readonly names = new Map<z.ZodType, string>();

  constructor(named: Record<string, z.ZodType>) {
    for (const [name, schema] of Object.entries(named)) this.names.set(schema, name);
    for (const [name, schema] of Object.entries(named)) this.schemas[name] = this.expand(schema, 'output');
  }

  /** A `$ref` for a named schema, the schema itself otherwise. */
  use(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const name = this.nameOf(schema);
    if (!name) return this.expand(schema, io);
    this.schemas[name] ??= this.expand(schema, io);
    return { $ref: `#/components/schemas/${name}` };
  }

  /** The properties of an object schema (query parameters), however it is named. */
  properties(schema: z.ZodType): { properties?: Record<string, JsonSchema>; required?: string[] } {
    return this.expand(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  }

  private nameOf(schema: z.ZodType): string | undefined {
    const id = z.globalRegistry.get(schema)?.id;
    return this.names.get(schema) ?? (typeof id === 'string' ? id : undefined);
  }

  /** The JSON Schema of `schema` itself, nested named schemas as `$ref`s (OpenAPI 3.1: no `$schema`/`$id`). */
  private expand(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const out = z.toJSONSchema(schema, {
      io,
      unrepresentable: 'any',
      target: 'draft-2020-12',
      override: (ctx) => {
        const current = ctx.zodSchema as unknown as z.ZodType;
        const name = current === schema ? undefined : this.names.get(current);
        if (name) {
          for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[key];
          (ctx.jsonSchema as JsonSchema).$ref = `#/components/schemas/${name}`;
        }
      },
    }) as JsonSchema;
    // Schemas named by `.meta({ id })` come back as `$defs`: they become components too.
    const rewritten = JSON.parse(JSON.stringify(out).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
    for (const [name, def] of Object.entries((rewritten.$defs ?? {}) as Record<string, JsonSchema>)) this.schemas[name] ??= def;
    delete rewritten.$defs;
    delete rewritten.$schema;
    // A root named by `.meta({ id })` comes back as a `$ref` to its own `$defs` entry: the schema is that entry.
    const rootRef = typeof rewritten.$ref === 'string' && Object.keys(rewritten).length === 1 ? rewritten.$ref.replace('#/components/schemas/', '') : undefined;
    return rootRef && this.schemas[rootRef] ? this.schemas[rootRef] : rewritten;
  }
}

/** `get /items/{id}/bulletin` becomes `getItemsIdBulletin`. */
function derivedOperationId(method: string, path: string): string {
  return `${method}${path.replace(/[{}]/g, '').replace(/\/(\w)/g, (_, c: string) => c.toUpperCase()).replace(/\W/g, '')}`;
}

/** `job_id` becomes `Job Id`, as FastAPI titles parameters. */
function titled(name: string): string {
  return name
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
}

const bodyMediaTypes = { json: ['application/json'], multipart: ['multipart/form-data'], form: ['application/x-www-form-urlencoded', 'multipart/form-data'] } as const;

/** Builds the OpenAPI 3.1 document of `routes`: the one builder of both services. */
export function buildOpenApiDocument<Caller, Auth extends string>(routes: readonly ApiRoute<Caller, Auth>[], info: OpenApiInfo<Auth>): JsonSchema {
  const book = new SchemaBook({
    ...info.components,
    HTTPValidationError: httpValidationErrorSchema,
    ValidationError: validationErrorSchema,
    ErrorDetail: errorDetailSchema,
  });

  const paths: Record<string, Record<string, unknown>> = {};
  for (const [p, item] of Object.entries(info.extraPaths ?? {})) paths[p] = { ...item };
  for (const route of routes) {
    const credential = info.security.of(route.auth);
    const names = pathParams(route.path);
    const parameters: unknown[] = names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string', title: titled(name) } }));
    if (route.query) {
      const query = book.properties(route.query);
      for (const [name, schema] of Object.entries(query.properties ?? {})) parameters.push({ name, in: 'query', required: (query.required ?? []).includes(name), schema });
    }
    // A missing credential header is a 401, not a 422: listed, but never required.
    for (const header of credential.headers ?? []) parameters.push({ name: header.name, in: 'header', required: false, schema: { type: 'string', title: header.title } });

    const success: Record<string, unknown> = route.produces && route.produces !== 'application/json'
      ? { [route.produces]: { schema: { type: 'string', format: 'binary' } } }
      : { 'application/json': route.response ? { schema: book.use(route.response, 'output') } : {} };
    if (route.alsoProduces) success[route.alsoProduces] = { schema: { type: 'string', format: 'binary' } };
    const responses: Record<string, unknown> = { [String(route.successStatus ?? 200)]: { description: 'Successful Response', content: success } };
    for (const [status, description] of Object.entries(route.otherSuccess ?? {})) responses[status] = { description, content: success };
    const errors: Record<number, string> = { ...credential.errors, ...route.errors };
    if (route.body || route.query) errors[422] ??= 'Validation Error';
    for (const [status, description] of Object.entries(errors).sort(([a], [b]) => Number(a) - Number(b))) {
      const schema = status === '422' ? { $ref: '#/components/schemas/HTTPValidationError' } : { $ref: '#/components/schemas/ErrorDetail' };
      responses[status] = { description, content: { 'application/json': { schema } } };
    }
    if (!route.errors) responses.default = { description: 'Any other error', content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorDetail' } } } };

    const operation: Record<string, unknown> = {
      ...(route.tags ? { tags: route.tags } : {}),
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      operationId: route.operationId ?? derivedOperationId(route.method, route.path),
      ...(parameters.length > 0 ? { parameters } : {}),
    };
    if (route.body) {
      const schema = book.use(route.body.schema, 'input');
      const content: Record<string, unknown> =
        route.body.kind === 'json-or-multipart'
          ? { 'application/json': { schema }, 'multipart/form-data': { schema: route.body.multipart ? book.use(route.body.multipart, 'input') : { type: 'object' } } }
          : Object.fromEntries(bodyMediaTypes[route.body.kind].map((m) => [m, { schema }]));
      operation.requestBody = { required: route.body.required, content };
    }
    operation.responses = responses;
    if (credential.security) operation.security = credential.security;
    if (route.since) operation['x-since'] = route.since;
    Object.assign(operation, credential.extensions);
    (paths[route.path] ??= {})[route.method] = operation;
  }

  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ url: info.serverUrl }],
    paths,
    components: { schemas: book.schemas, securitySchemes: info.security.schemes },
  };
}
