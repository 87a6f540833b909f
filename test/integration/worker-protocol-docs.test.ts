import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiCallTable } from '../../server/http/openapi-tables.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';

/**
 * docs/worker-protocol.md's table of calls is generated from the bench's /openapi.json, itself
 * generated from the route table and the worker protocol's schemas (`wire/worker/`): a schema
 * changed without the docs fails here with the table to paste. `UPDATE_DOCS=1` rewrites it.
 */
const file = new URL('../../docs/worker-protocol.md', import.meta.url);
const BEGIN = '<!-- calls: generated from wire/worker through /openapi.json (test/integration/worker-protocol-docs.test.ts) -->';
const END = '<!-- end of calls -->';

describe('docs/worker-protocol.md', () => {
  let app: BenchTestApp;
  beforeAll(async () => {
    app = await startBenchTestApp();
  });
  afterAll(async () => {
    await app.close();
  });

  it('lists every call of the worker protocol as its schemas say', async () => {
    const doc = (await (await app.request('/openapi.json')).json()) as Record<string, unknown>;
    const generated = openApiCallTable(doc, ['/api/v1/worker/', '/admin/workers']);
    const text = readFileSync(file, 'utf8');
    const begin = text.indexOf(BEGIN);
    const end = text.indexOf(END);
    expect(begin, `docs/worker-protocol.md should hold the markers ${BEGIN} and ${END}`).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(begin);
    const current = text.slice(begin + BEGIN.length, end).trim();
    if (process.env.UPDATE_DOCS === '1' && current !== generated) writeFileSync(file, `${text.slice(0, begin + BEGIN.length)}\n${generated}\n${text.slice(end)}`);
    else expect(current, 'docs/worker-protocol.md: the table of calls differs from the schemas (UPDATE_DOCS=1 rewrites it)').toBe(generated);
    // The table is about something: every call of the protocol's conversation is in it.
    expect(generated).toContain('| POST /api/v1/worker/claim |');
    expect(generated.split('\n').length).toBeGreaterThan(15);
  });
});
