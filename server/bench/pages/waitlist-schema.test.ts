import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PAGES_ROUTES } from './pages-router.js';
import { pagesOpenApiPaths } from './pages-openapi.js';
import { parseWaitlistForm } from './waitlist-form.js';
import { waitlistFormSchema } from './waitlist-schema.js';

describe('waitlist schema and parser agree', () => {
  const field = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom('', 'person', 'team', 'agent', 'Person', 'robot'),
    fc.emailAddress(),
    fc.string({ unit: 'grapheme', maxLength: 520 }),
    fc.string({ maxLength: 20 }),
  );

  it('accept exactly the same forms (property)', () => {
    fc.assert(
      fc.property(fc.record({ kind: field, email: field, note: field, csrf: field }), (form) => {
        const present = Object.entries(form).filter((e): e is [string, string] => e[1] !== undefined);
        const parsed = parseWaitlistForm(new Map(present.map(([k, v]) => [k, [v]])));
        const zodded = waitlistFormSchema.safeParse(Object.fromEntries(present));
        expect(zodded.success).toBe(parsed.ok);
      }),
      { numRuns: 300 },
    );
  });
});

describe('OpenAPI fragment', () => {
  it('documents every route of the pages router with its method, and nothing else', () => {
    const paths = pagesOpenApiPaths();
    // The router names path parameters as express does (`:board`), the document as OpenAPI does (`{board}`).
    const documented = Object.entries(paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`));
    expect(documented.sort()).toEqual(PAGES_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('describes the waitlist form with its defaults, kinds and note bound', () => {
    const post = pagesOpenApiPaths()['/api/v1/waitlist']?.['post'] as {
      requestBody: { content: Record<string, { schema: { properties: Record<string, Record<string, unknown>> } }> };
    };
    const schema = post.requestBody.content['application/x-www-form-urlencoded']?.schema;
    expect(schema?.properties['kind']).toMatchObject({ default: 'person', enum: ['person', 'team', 'agent'] });
    expect(schema?.properties['email']).toMatchObject({ default: '', type: 'string' });
    expect(schema?.properties['note']).toMatchObject({ default: '', maxLength: 500 });
    expect(schema?.properties['csrf']).toMatchObject({ default: '' });
    expect(schema).not.toHaveProperty('$schema');
  });
});
