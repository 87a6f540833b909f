import { readFileSync } from 'node:fs';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { bulletinRank } from '../../core/relay/tally.js';
import { claimKinds } from '../../core/relay/claim.js';
import { defaultThreshold, QUORUM_SET_MAX_DEPTH, QUORUM_SET_MAX_NODES } from '../../core/relay/quorum-set.js';
import { voteValues, votePhases } from '../../core/relay/vote.js';
import { BENCH_API_VERSION } from '../../server/bench/domain/bench.js';
import { defaultBenchLimits } from '../../server/bench/domain/bench-limits.js';
import { FORM_DEFAULTS } from '../../wire/bench/bench-schemas.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { EMAIL_MAX_CHARS } from '../../server/bench/pages/email-address.js';
import { WAITLIST_BODY_LIMIT_BYTES } from '../../server/bench/pages/pages-router.js';
import { NOTE_MAX_CHARS } from '../../server/bench/pages/waitlist-form.js';
import { buildFormSchemas } from '../../wire/bench/bench-schemas.js';
import { memoryLogger } from '../../server/http/logger.js';
import { credentialFormats, relayLimits, relayProtocol, relayScheme, relayVersion } from '../../wire/relay/relay-facts.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * docs/interface/ states the interfaces hilbench implements, in tables. These tests read those
 * tables and hold the code to them (and the tables to the code): a change to either side alone
 * fails here, naming the row.
 */

type Row = Record<string, string>;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- OpenAPI documents are walked, not typed

const readDoc = (name: string) => readFileSync(new URL(`../../docs/interface/${name}`, import.meta.url), 'utf8');

/** The `index`th Markdown table under `heading` (an exact heading line), before the next heading. */
function table(doc: string, heading: string, index = 0): Row[] {
  const lines = doc.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const tables: string[][][] = [];
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6} /.test(line)) break;
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    if (!inTable) tables.push([]);
    inTable = true;
    tables.at(-1)!.push(line.slice(2, -2).split(' | ').map((c) => c.trim()));
  }
  const found = tables[index];
  if (!found || found.length < 2) throw new Error(`no table ${index} under "${heading}"`);
  const [head, , ...body] = found;
  return body.map((cells) => Object.fromEntries(head!.map((h, i) => [h, cells[i] ?? ''])));
}

const list = (cell: string) => (cell === '' ? [] : cell.split(',').map((s) => s.trim()));
const unquote = (cell: string) => cell.replace(/^`|`$/g, '');

describe('docs/interface/bench-service.md', () => {
  const doc = readDoc('bench-service.md');
  let app: BenchTestApp;
  let openApi: Json;
  beforeAll(async () => {
    // As `hilbench serve` runs it: with MCP at /mcp (the handler does not matter to the document).
    app = await startBenchTestApp({ mcp: async (_req, res) => void res.end() });
    openApi = (await (await app.request('/openapi.json')).json()) as Json;
  });
  afterAll(() => app.close());

  const specRows = table(doc, '## Endpoints');
  const extensionRows = table(doc, '### Endpoints hilbench adds');

  it('states the version the service reports', async () => {
    const version = Object.fromEntries(table(doc, '## Version').map((r) => [r.Item, r.Value]));
    expect(version['interface version']).toBe(BENCH_API_VERSION);
    expect(openApi.info.version).toBe(version['interface version']);
    expect(((await (await app.request('/api/v1/health')).json()) as Json).version).toBe(version['interface version']);
    expect(((await (await app.request('/api/v1/stats')).json()) as Json).version).toBe(version['interface version']);
    const prefixed = specRows.filter((r) => !/ (text|application|image)\//.test(` ${r.Success}`) && r.Path !== '/admin');
    for (const r of prefixed) expect(r.Path, `${r.Method} ${r.Path}`).toMatch(new RegExp(`^${version['machine-facing path prefix']}/`));
  });

  it('lists exactly the endpoints of /openapi.json, plus the documented extensions', () => {
    const documented = [...specRows, ...extensionRows].map((r) => `${r.Method} ${r.Path}`).sort();
    const served = Object.entries(openApi.paths as Json).flatMap(([p, ops]) => Object.keys(ops as Json).map((m) => `${m.toUpperCase()} ${p}`));
    expect(documented).toEqual([...served, 'GET /openapi.json'].sort());
    expect(new Set(documented).size).toBe(documented.length);
  });

  it.each([...specRows, ...extensionRows].filter((r) => r.Path !== '/openapi.json').map((r) => [`${r.Method} ${r.Path}`, r] as const))(
    '%s: credential, success answer and statuses as documented',
    (_name, row) => {
      const op = openApi.paths[row.Path!][row.Method!.toLowerCase()] as Json;
      const scheme = (op.security as Json[] | undefined)?.flatMap((s) => Object.keys(s))[0];
      expect({ HTTPBearer: 'bearer', AdminToken: 'admin', WorkerToken: 'worker' }[scheme ?? ''] ?? 'none').toBe(row.Credential);
      const [status, what] = row.Success!.split(' ') as [string, string];
      const success = op.responses[status] as Json;
      if (what.includes('/')) expect(Object.keys(success.content)).toEqual([what]);
      else {
        // `200 Job or JobText`: one of the named schemas, as the query asks (decision 0537).
        const schema = success.content['application/json'].schema as Json;
        const refs = schema.anyOf ? (schema.anyOf as Json[]).map((s) => s.$ref) : [schema.$ref];
        expect(refs).toEqual(row.Success!.slice(status.length + 1).split(' or ').map((name) => `#/components/schemas/${name}`));
      }
      expect(list(row.Statuses!)).toEqual(Object.keys(op.responses).sort());
    },
  );

  it('the documented extension /openapi.json is served', async () => {
    const res = await app.request('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('request bodies: content types and whether a body is required', () => {
    const bodies = table(doc, '## Request bodies');
    const withBody = Object.entries(openApi.paths as Json).flatMap(([p, ops]) =>
      Object.entries(ops as Json).flatMap(([m, op]) => ((op as Json).requestBody ? [`${m.toUpperCase()} ${p}`] : [])),
    );
    expect(bodies.map((r) => r.Endpoint).sort()).toEqual(withBody.sort());
    for (const r of bodies) {
      const [method, p] = r.Endpoint!.split(' ') as [string, string];
      const body = openApi.paths[p][method.toLowerCase()].requestBody as Json;
      expect(list(r['Content types']!), r.Endpoint).toEqual(Object.keys(body.content));
      expect(body.required, r.Endpoint).toBe(r.Body === 'required');
    }
  });

  const forms = buildFormSchemas(defaultBenchLimits);
  const fieldTables = [
    ['### Agent registration (POST /api/v1/agents/register)', '/api/v1/agents/register', forms.agentRegister.shape],
    ['### Waitlist (POST /api/v1/waitlist)', '/api/v1/waitlist', undefined],
    ['### Session open (POST /api/v1/sessions)', '/api/v1/sessions', forms.sessionOpen.shape],
    ['### Flash job (POST /api/v1/jobs/flash)', '/api/v1/jobs/flash', forms.flashJob.shape],
  ] as const;

  it.each(fieldTables)('%s: fields, types, defaults and limits equal the form schema', (heading, p, shape) => {
    const rows = table(doc, heading);
    const content = openApi.paths[p].post.requestBody.content as Json;
    const schema = (Object.values(content)[0] as Json).schema as Json;
    expect(rows.map((r) => r.Field)).toEqual(Object.keys(schema.properties));
    for (const r of rows) {
      const field = r.Field!;
      const prop = schema.properties[field] as Json;
      expect(r.Required === 'yes', field).toBe(((schema.required ?? []) as string[]).includes(field));
      expect(r.Default === 'none' ? undefined : JSON.parse(r.Default!), field).toEqual(prop.default);
      expect(r.Type === 'file', field).toBe(prop.format === 'binary');
      const limit = r.Limit!;
      const length = /^length (\d+)\.\.(\d+)/.exec(limit);
      if (length) {
        expect(prop.minLength ?? 0, field).toBe(Number(length[1]));
        expect(prop.maxLength ?? { email: EMAIL_MAX_CHARS }[field], field).toBe(Number(length[2]));
      }
      const oneOf = /^one of (.*)$/.exec(limit);
      if (oneOf) expect(list(oneOf[1]!), field).toEqual(prop.enum);
      const range = /^(\d+(?:\.\d+)?) (<|<=) x <= (\d+(?:\.\d+)?)$/.exec(limit);
      if (range) {
        // Numeric bounds live in the schema's parse step, not in the OpenAPI text: check behaviour.
        const parse = (text: string) => (shape as Record<string, { safeParse(v: unknown): { success: boolean } }>)[field]!.safeParse(text).success;
        const [low, high] = [Number(range[1]), Number(range[3])];
        expect(parse(String(low)), `${field} = ${low}`).toBe(range[2] === '<=');
        expect(parse(String(low + 0.001)), `${field} just above ${low}`).toBe(true);
        expect(parse(String(high)), `${field} = ${high}`).toBe(true);
        expect(parse(String(high + 0.001)), `${field} just above ${high}`).toBe(false);
      }
      expect(length ?? oneOf ?? range ?? r.Type !== 'numeric text', `${field}: numeric text needs a range`).toBeTruthy();
    }
  });

  it('the form defaults are the interface defaults the limits are checked against', () => {
    const defaultOf = (heading: string, field: string) => JSON.parse(table(doc, heading).find((r) => r.Field === field)!.Default!) as string;
    expect(defaultOf(fieldTables[0][0], 'label')).toBe(FORM_DEFAULTS.label);
    expect(defaultOf(fieldTables[2][0], 'idle_seconds')).toBe(FORM_DEFAULTS.idleSeconds);
    expect(defaultOf(fieldTables[3][0], 'uart_seconds')).toBe(FORM_DEFAULTS.uartSeconds);
  });

  it('response bodies: exactly the schemas of /openapi.json, with their fields in order', () => {
    const rows = table(doc, '## Response bodies');
    const schemas = openApi.components.schemas as Json;
    expect(rows.map((r) => r.Schema).sort()).toEqual(Object.keys(schemas).sort());
    for (const r of rows) expect(list(r.Fields!), r.Schema).toEqual(Object.keys(schemas[r.Schema!].properties));
  });

  it('states equal the enums of the response schemas', () => {
    const schemas = openApi.components.schemas as Json;
    for (const r of table(doc, '## States')) {
      const [schema, field] = r.Field!.split('.') as [string, string];
      expect(list(r.Values!), r.Field).toEqual(schemas[schema].properties[field].enum);
    }
  });

  it('credentials and the validation error body equal the OpenAPI components', () => {
    const schemes = openApi.components.securitySchemes as Json;
    const auth = Object.fromEntries(table(doc, '## Authentication').map((r) => [r.Credential, unquote(r.Header!)]));
    expect(auth.bearer).toMatch(new RegExp(`^authorization: ${schemes.HTTPBearer.scheme as string} `, 'i'));
    expect(auth.admin).toMatch(new RegExp(`^${schemes.AdminToken.name as string}: `));
    expect(auth.worker).toMatch(new RegExp(`^authorization: ${schemes.WorkerToken.scheme as string} hbw_`, 'i'));
    const validation = openApi.components.schemas.ValidationError as Json;
    const rows = table(doc, '## Errors', 1);
    expect(rows.map((r) => r.Field)).toEqual(Object.keys(validation.properties));
    expect(rows.filter((r) => r.Required === 'yes').map((r) => r.Field)).toEqual(validation.required);
    expect(table(doc, '## Errors', 0).map((r) => r.Field)).toEqual(Object.keys(openApi.components.schemas.HTTPValidationError.properties));
  });

  it('limits: every configurable limit with its default, and the fixed ones', () => {
    const rows = table(doc, '## Limits');
    expect(Object.fromEntries(rows.map((r) => [r.Limit, Number(r.Default)]))).toEqual(defaultBenchLimits);
    const fixed = Object.fromEntries(table(doc, '## Limits', 1).map((r) => [r.Limit, Number(r.Value)]));
    expect(fixed).toEqual({ 'waitlist form body': WAITLIST_BODY_LIMIT_BYTES, 'waitlist email': EMAIL_MAX_CHARS, 'waitlist note': NOTE_MAX_CHARS });
  });
});

describe('docs/interface/relay-service.md', () => {
  const doc = readDoc('relay-service.md');
  const data = tempDataDir();
  let relay: RunningRelay;
  let health: Json;
  let openApi: Json;
  beforeAll(async () => {
    relay = await startRelayServer({ clock: clockFromFakeTimers(createClock(Date.UTC(2026, 0, 1))), dataDir: data.dir, logger: memoryLogger() });
    health = (await (await fetch(`${relay.baseUrl}/health`)).json()) as Json;
    openApi = (await (await fetch(`${relay.baseUrl}/openapi.json`)).json()) as Json;
  });
  afterAll(async () => {
    await relay.close();
    data.remove();
  });

  const endpointRows = table(doc, '## Endpoints');
  const extensionRows = table(doc, '### Endpoints hilbench adds');

  it('states the versions and identifiers the relay reports', () => {
    const v = Object.fromEntries(table(doc, '## Version').map((r) => [r.Item, r.Value]));
    expect([v.version, v.protocol, v['voting scheme']]).toEqual([relayVersion, relayProtocol, relayScheme]);
    expect([health.version, health.protocol, health.scheme, openApi.info.version]).toEqual([v.version, v.protocol, v['voting scheme'], v.version]);
    expect(health.schemas).toEqual({ claim: v['claim schema'], vote: v['vote schema'], register: v['registration schema'], session: v['session schema'] });
    expect(v['earlier listing']).toBe('0.9.3');
  });

  it('page addresses are those /health publishes', () => {
    const pages = Object.fromEntries(table(doc, '## Pages').map((r) => [r.Page, relay.humanUrl + r.Path]));
    expect(pages).toEqual(health.pages);
  });

  it('lists exactly the endpoints of /openapi.json (44), plus the documented extensions', async () => {
    expect(endpointRows).toHaveLength(44);
    const served = Object.entries(openApi.paths as Json).flatMap(([p, ops]) => Object.keys(ops as Json).map((m) => `${m.toUpperCase()} ${p}`));
    // Both ways: every served endpoint is a row of the interface or a documented extension, and every row is served.
    const documented = [...endpointRows, ...extensionRows].map((r) => `${r.Method} ${r.Path}`);
    expect(documented.sort()).toEqual([...served, 'GET /openapi.json'].sort());
    expect(new Set(documented).size).toBe(documented.length);
    expect(extensionRows.map((r) => `${r.Method} ${r.Path}`)).toContain('GET /openapi.json');
    expect((await fetch(`${relay.baseUrl}/openapi.json`)).status).toBe(200);
  });

  it.each(extensionRows.filter((r) => r.Path !== '/openapi.json').map((r) => [`${r.Method} ${r.Path}`, r] as const))('extension %s: credential and success answer as documented', (_name, row) => {
    const op = openApi.paths[row.Path!][row.Method!.toLowerCase()] as Json;
    expect(op['x-credential']).toBe(row.Credential);
    expect(Object.keys(op.responses)).toContain(row.Success);
  });

  it.each(endpointRows.map((r) => [`${r.Method} ${r.Path}`, r] as const))('%s: version, credential, query and success answer as documented', (_name, row) => {
    const op = openApi.paths[row.Path!][row.Method!.toLowerCase()] as Json;
    expect(op['x-since']).toBe(row['In 0.9.3'] === 'yes' ? '0.9.3' : '0.9.19');
    expect(row['In 0.9.19']).toBe('yes');
    expect(op['x-credential']).toBe(row.Credential);
    const query = ((op.parameters ?? []) as Json[]).filter((q) => q.in === 'query').map((q) => `${q.name as string}${q.required ? ' (required)' : ''}`);
    expect(list(row['Query parameters']!)).toEqual(query);
    const [status, contentTypes = 'application/json'] = row.Success!.split(/ (.*)/);
    expect(Object.keys(op.responses[status!].content)).toEqual(list(contentTypes));
  });

  it('item fields: kinds and limits equal the code', () => {
    const item = Object.fromEntries(table(doc, '### Item').map((r) => [r.Field, r.Limit]));
    expect(list(item.kind!.replace(/^one of /, ''))).toEqual([...claimKinds]);
    expect([item.title, item.body, item.file].map(Number)).toEqual([relayLimits.titleMaxChars, relayLimits.bodyMaxChars, relayLimits.fileMaxBytes]);
  });

  it('vote values and phases equal the code', () => {
    const vote = Object.fromEntries(table(doc, '### Vote').map((r) => [r.Field, r.Notes]));
    expect(vote.value).toBe(`one of ${voteValues.join(', ')}`);
    expect(vote.phase).toBe(`one of ${votePhases.join(', ')}`);
    expect(unquote(vote.schema!)).toBe(health.schemas.vote);
  });

  it('credential formats are those the relay publishes', () => {
    const formats = Object.fromEntries(table(doc, '## Credentials').map((r) => [r.Caller, unquote(r['Header format']!)]));
    expect(formats).toEqual({ Human: credentialFormats.human, 'Agent (bot)': credentialFormats.bot });
    expect(health.credentials).toEqual(credentialFormats);
  });

  it('limits: the published ones equal /health, the others the code, and together every limit', () => {
    const published = table(doc, '## Limits');
    expect(Object.fromEntries(published.map((r) => [r.Limit, Number(r.Value)]))).toEqual(health.limits);
    const others = Object.fromEntries(table(doc, '## Limits', 1).map((r) => [r.Limit, Number(r.Value)]));
    const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
    const all = { ...Object.fromEntries(published.map((r) => [camel(r.Limit!), Number(r.Value)])), ...others };
    expect(all).toEqual(relayLimits);
  });

  it('scp-s5: slice rules and bulletin ranks equal the core', () => {
    const rules = Object.fromEntries(table(doc, '### Slices').map((r) => [r.Rule, r.Value]));
    expect(rules['default threshold of n entries']).toMatch(/^1 \+ floor\(\(67 n - 1\) \/ 100\)/);
    for (let n = 1; n <= 40; n++) expect(defaultThreshold(n), `n = ${n}`).toBe(1 + Math.floor((67 * n - 1) / 100));
    expect(rules['nesting depth']).toBe(`at most ${QUORUM_SET_MAX_DEPTH} (a flat set has depth 1)`);
    expect(rules['nodes in all']).toBe(`1..${QUORUM_SET_MAX_NODES}`);
    expect(Object.fromEntries(table(doc, '### Bulletin').map((r) => [r.State, Number(r.Rank)]))).toEqual(bulletinRank);
  });
});
