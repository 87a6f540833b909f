import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { problemCodes } from '../../core/relay/problem.js';
import { coreProblemError } from '../../wire/core-problem-errors.js';
import { problemTypes, safeParseForProblems, zodIssuesToValidation } from '../../wire/problem-detail.js';
import { numericTextField, numericTextParam } from '../../wire/form-fields.js';

/**
 * The 422 problem catalog, as Fastify keeps its error codes: the codes in the code
 * (`problemTypes`), the table in docs/problems.md and the places that answer them agree. A new
 * code added in one place and not the others fails here, naming it.
 */
const root = path.resolve(import.meta.dirname, '../..');
const catalog = Object.keys(problemTypes).sort();

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((d) => {
    const rel = path.join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(rel);
    return d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') ? [rel] : [];
  });
}

/** `type: '...'` values that name something else than a problem (item types, OpenAPI, security schemes). */
const NOT_PROBLEMS = new Set(['claim', 'file', 'string', 'object', 'integer', 'http', 'user_http', 'spki', 'openapi', 'bearer', 'png']);

/** Every problem code the sources build by hand: `type: '...'` literals, `issue('...'` and `invalidInput(..., '...')`. */
function handBuiltCodes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of ['core/relay', 'wire', 'server'].flatMap(sourceFiles)) {
    const text = readFileSync(path.join(root, file), 'utf8');
    for (const m of text.matchAll(/\btype: '([a-z_]+)'/g)) if (!NOT_PROBLEMS.has(m[1] as string)) found.set(m[1] as string, file);
    for (const m of text.matchAll(/\bissue\('([a-z_]+)'/g)) found.set(m[1] as string, file);
    for (const m of text.matchAll(/\binvalidInput\([^;]*?, '([a-z_]+)'\)/g)) found.set(m[1] as string, file);
  }
  return found;
}

describe('the 422 problem catalog', () => {
  it('docs/problems.md lists exactly the catalog (its first table: the types an answer carries)', () => {
    const documented = [...readFileSync(path.join(root, 'docs/problems.md'), 'utf8').matchAll(/^\| `([a-z_]+)` \| (?!`)/gm)].map((m) => m[1]).sort();
    expect(documented).toEqual(catalog);
  });

  it("docs/problems.md lists every code of the relay core with the type the translator answers", () => {
    const rows = [...readFileSync(path.join(root, 'docs/problems.md'), 'utf8').matchAll(/^\| `([a-z_]+)` \| `([a-z_]+)` \|/gm)].map((m) => [m[1], m[2]]);
    const translated = problemCodes.map((code) => [code, coreProblemError({ path: ['x'], code, limit: 1, expected: ['x'] }).type]);
    expect(rows).toEqual(translated);
    expect(translated.every(([, type]) => catalog.includes(type as string))).toBe(true);
  });

  it('every code the services build by hand is in the catalog', () => {
    const unknown = [...handBuiltCodes()].filter(([code]) => !catalog.includes(code)).map(([code, file]) => `${code} (${file})`);
    expect(unknown).toEqual([]);
    // The scan finds the hand-built codes at all (a scan that finds nothing would pass anything).
    expect(handBuiltCodes().size).toBeGreaterThan(10);
  });

  it('every code the translator makes of zod issues is in the catalog', () => {
    const failures: Array<[z.ZodType, unknown]> = [
      [z.object({ a: z.string() }), {}],
      [z.strictObject({ a: z.string() }), { a: 'x', b: 1 }],
      [z.object({ a: z.string().min(2) }), { a: 'x' }],
      [z.object({ a: z.string().max(1) }), { a: 'xy' }],
      [z.object({ a: z.string().regex(/^a$/) }), { a: 'b' }],
      [z.object({ a: z.array(z.number()).min(1) }), { a: [] }],
      [z.object({ a: z.array(z.number()).max(0) }), { a: [1] }],
      [z.object({ a: z.number().gt(0) }), { a: 0 }],
      [z.object({ a: z.number().gte(0) }), { a: -1 }],
      [z.object({ a: z.number().lt(0) }), { a: 0 }],
      [z.object({ a: z.number().lte(0) }), { a: 1 }],
      [z.object({ a: z.number() }), { a: 'x' }],
      [z.object({ a: z.number() }), { a: Infinity }],
      [z.object({ a: z.number().int() }), { a: 'x' }],
      [z.object({ a: z.boolean() }), { a: 'x' }],
      [z.object({ a: z.array(z.string()) }), { a: 'x' }],
      [z.object({ a: z.string() }), { a: 1 }],
      [z.object({ a: z.enum(['x', 'y']) }), { a: 'z' }],
      [z.object({ a: z.object({}) }), { a: 1 }],
      [z.object({ a: numericTextField({ default: '1', description: '' }) }), { a: 'soon' }],
      [z.object({ a: numericTextParam({ whole: true, description: '' }) }), { a: '1.5' }],
      [z.object({ a: z.string().refine(() => false, { message: 'never' }) }), { a: 'x' }],
    ];
    const types = failures.flatMap(([schema, input]) => {
      const result = safeParseForProblems(schema, input);
      if (result.success) throw new Error(`${JSON.stringify(input)} passed`);
      return zodIssuesToValidation(result.error.issues, 'body', input).map((entry) => entry.type);
    });
    expect(types.filter((type) => !catalog.includes(type))).toEqual([]);
    expect(new Set(types).size).toBeGreaterThan(15);
  });
});
