import path from 'node:path';
import type { RawExchange, RawResponse } from './raw-http.js';

/** One route as its service documents it in `/openapi.json`. */
export interface FuzzRoute {
  /** Upper case. */
  method: string;
  /** OpenAPI form, `{id}` for parameters. */
  path: string;
  /** Content types a success answer is documented with (HTML, text or PNG are allowed on success only). */
  successTypes: string[];
  /** Names of the request body's fields (JSON properties or form fields), for bodies that look almost right. */
  fields: string[];
}

type Json = Record<string, unknown>;

/**
 * Every operation of an OpenAPI document, plus `extra` routes a service serves but does not
 * document (the relay's human pages). New routes are fuzzed as soon as they are documented.
 */
export function routesFromOpenApi(doc: Json, extra: readonly FuzzRoute[] = []): FuzzRoute[] {
  const components = ((doc.components as Json | undefined)?.schemas ?? {}) as Json;
  const resolve = (schema: unknown): Json => {
    const ref = (schema as Json | undefined)?.$ref;
    return (typeof ref === 'string' ? components[ref.split('/').at(-1)!] : schema) as Json;
  };
  const routes: FuzzRoute[] = [];
  for (const [routePath, operations] of Object.entries(doc.paths as Json)) {
    for (const [method, operation] of Object.entries(operations as Json)) {
      const op = operation as { responses?: Json; requestBody?: { content?: Json } };
      const successTypes = Object.entries(op.responses ?? {})
        .filter(([status]) => /^[23]/.test(status))
        .flatMap(([, response]) => Object.keys(((response as Json).content ?? {}) as Json));
      const fields = Object.values(op.requestBody?.content ?? {}).flatMap((media) => Object.keys((resolve((media as Json).schema)?.properties ?? {}) as Json));
      routes.push({ method: method.toUpperCase(), path: routePath, successTypes, fields: [...new Set(fields)] });
    }
  }
  return [...routes, ...extra];
}

/** Where the repository lives: a server path in an answer would name it. */
const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** A stack frame as node prints it (`    at fn (/path/file.ts:12:5)`). */
const STACK_FRAME = /\n\s+at .*:\d+:\d+/;

/** What an answer must never contain, whatever was sent. */
function leaks(text: string): string | undefined {
  if (text.includes(REPO_ROOT)) return 'names a server path';
  if (text.includes('node_modules')) return 'names node_modules';
  if (STACK_FRAME.test(text)) return 'carries a stack trace';
  return undefined;
}

/** Problems with one final answer to `route` (empty when it is fine). */
export function answerProblems(route: FuzzRoute, response: RawResponse): string[] {
  const problems: string[] = [];
  const text = response.body.toString('utf8');
  if (response.status >= 500) problems.push(`answered ${response.status}`);
  const leak = leaks(text);
  if (leak) problems.push(`the body ${leak}`);
  const type = (response.headers['content-type'] ?? '').toLowerCase();
  const success = response.status >= 200 && response.status < 300;
  const documentedOther = success && route.successTypes.some((t) => !t.includes('json') && type.startsWith(t.split(';')[0]!.toLowerCase()));
  if (!documentedOther && response.status >= 200 && response.status !== 204 && !(response.status >= 300 && response.status < 400)) {
    if (!type.startsWith('application/json')) problems.push(`content-type ${JSON.stringify(type)} is not JSON`);
    else {
      try {
        const parsed = JSON.parse(text) as unknown;
        if (response.status >= 400 && (typeof parsed !== 'object' || parsed === null || !('detail' in parsed))) problems.push('an error without "detail"');
      } catch {
        problems.push('the body is not JSON');
      }
    }
  }
  return problems;
}

/**
 * Problems with one exchange: each final answer checked, and a request the client sent whole
 * (`complete`) must get exactly one final answer; one it hung up on may get none.
 */
export function exchangeProblems(route: FuzzRoute, exchange: RawExchange, options: { complete: boolean }): string[] {
  const finals = exchange.responses.filter((r) => r.status >= 200);
  const problems = finals.flatMap((r) => answerProblems(route, r));
  const leak = leaks(exchange.leftover.toString('utf8'));
  if (leak) problems.push(`the unparsed rest ${leak}`);
  if (options.complete && finals.length !== 1) problems.push(`${finals.length} final answers to a complete request`);
  if (options.complete && exchange.leftover.length > 0) problems.push(`unparsable bytes after the answer: ${JSON.stringify(exchange.leftover.toString('latin1').slice(0, 120))}`);
  return problems;
}
