import { z } from 'zod';
import { errorDetailSchema, validationErrorSchema } from '../http/openapi.js';
import { credentialFormats, credentialMeaning, relayLimits, relayVersion } from './relay-facts.js';
import type { RelayRoute } from './relay-route.js';

/**
 * JSON Schema of a zod schema, with named schemas (`.meta({ id })`) moved to `components.schemas`
 * and every `#/$defs/X` reference rewritten to `#/components/schemas/X`.
 */
function jsonSchema(schema: z.ZodType, components: Record<string, unknown>, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const raw = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  const rewritten = JSON.parse(JSON.stringify(raw).replaceAll('"#/$defs/', '"#/components/schemas/')) as Record<string, unknown>;
  const defs = (rewritten.$defs ?? {}) as Record<string, unknown>;
  Object.assign(components, defs);
  delete rewritten.$defs;
  delete rewritten.$schema;
  return rewritten;
}

function plainJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/** Follows one `$ref` into the components (query parameters need the object's properties). */
function resolved(schema: Record<string, unknown>, components: Record<string, unknown>): Record<string, unknown> {
  const ref = schema.$ref;
  return typeof ref === 'string' ? ((components[ref.replace('#/components/schemas/', '')] ?? schema) as Record<string, unknown>) : schema;
}

// The error bodies are the HTTP layer's (same components as the bench service's document).
const errorSchema = { $ref: '#/components/schemas/ErrorDetail' };
const validationSchema = { $ref: '#/components/schemas/HTTPValidationError' };

/** /openapi.json: built from the same route table and zod schemas that validate requests. */
export function relayOpenApi(routes: readonly RelayRoute[], baseUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = {
    ErrorDetail: plainJsonSchema(errorDetailSchema),
    ValidationError: plainJsonSchema(validationErrorSchema),
    HTTPValidationError: { type: 'object', properties: { detail: { type: 'array', items: { $ref: '#/components/schemas/ValidationError' } } } },
  };
  for (const r of routes) {
    const parameters: Record<string, unknown>[] = [];
    for (const match of r.path.matchAll(/\{(\w+)\}/g)) parameters.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } });
    if (r.query) {
      const qs = resolved(jsonSchema(r.query, schemas), schemas) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(qs.properties ?? {})) parameters.push({ name, in: 'query', required: qs.required?.includes(name) ?? false, schema });
    }
    const responses: Record<string, unknown> = {
      [String(r.successStatus ?? 200)]: { description: 'success', content: { [r.produces ?? 'application/json']: r.response ? { schema: jsonSchema(r.response, schemas, 'output') } : {} } },
      default: { description: 'error', content: { 'application/json': { schema: errorSchema } } },
    };
    if (r.body || r.query || parameters.length > 0) responses['422'] = { description: 'validation error', content: { 'application/json': { schema: validationSchema } } };
    if (r.auth === 'human' || r.auth === 'bot' || r.auth === 'human-or-bot') {
      responses['401'] = { description: 'credential missing, malformed or revoked' };
      if (r.auth !== 'human-or-bot') responses['403'] = { description: 'the wrong kind of credential for this endpoint' };
    }
    const op: Record<string, unknown> = {
      summary: r.summary,
      operationId: `${r.method}${r.path.replace(/[{}]/g, '').replace(/\/(\w)/g, (_, c: string) => c.toUpperCase()).replace(/\W/g, '')}`,
      'x-credential': r.auth,
      'x-since': r.since,
      parameters,
      responses,
    };
    if (r.auth === 'human') op.security = [{ human: [] }];
    else if (r.auth === 'bot') op.security = [{ bot: [] }];
    else if (r.auth === 'human-or-bot') op.security = [{ human: [] }, { bot: [] }];
    else op.security = [];
    if (r.body) {
      const content: Record<string, unknown> = { 'application/json': { schema: jsonSchema(r.body, schemas) } };
      if (r.bodyKind === 'json-or-multipart') {
        content['multipart/form-data'] = {
          schema: { type: 'object', properties: { file: { type: 'string', format: 'binary', maxLength: relayLimits.fileMaxBytes }, title: { type: 'string', maxLength: relayLimits.titleMaxChars } }, required: ['file'] },
        };
      }
      op.requestBody = { required: true, content };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'x-relay', version: relayVersion, description: 'Relay and voting service (scp-s5). Errors: {"detail": "..."}; 422: {"detail": [{type, loc, msg, input, ctx}]}.' },
    servers: [{ url: baseUrl }],
    components: {
      schemas,
      securitySchemes: {
        human: { type: 'http', scheme: 'bearer', description: `${credentialFormats.human}. ${credentialMeaning.human}` },
        bot: { type: 'apiKey', in: 'header', name: 'Authorization', description: `${credentialFormats.bot}. ${credentialMeaning.bot}` },
      },
    },
    paths,
  };
}
