import { createClock } from '@sinonjs/fake-timers';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, registrationFor, sessionFor, sliceDeclarationBy, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * Issue 18, "done when": walking the live /openapi.json, every route documents every success answer
 * with a schema that says something (not `{}`, not a bare object) and lists its error statuses (no
 * catch-all `default`); the statuses a route really answers are the ones listed for it; and the
 * table "Error statuses per route" of docs/relay-api.md says what /openapi.json says.
 */
const fakeTime = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fakeTime);
const data = tempDataDir('relay-statuses-');
const operatorKey = generateNodeKey();
let relay: RunningRelay;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- OpenAPI documents are walked, not typed
let openapi: Json;
let operator: TestNode;
let other: TestNode;

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [operatorKey.nodeId] });
  openapi = (await call<Json>(relay.baseUrl, 'GET', '/openapi.json')).body;
  operator = await registerNode(relay, clock, { key: operatorKey });
  other = await registerNode(relay, clock);
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

const operations = () => Object.entries(openapi.paths as Json).flatMap(([p, ops]) => Object.entries(ops as Json).map(([m, op]) => ({ route: `${m.toUpperCase()} ${p}`, op: op as Json })));
const resolve = (schema: Json): Json => (schema.$ref ? openapi.components.schemas[String(schema.$ref).replace('#/components/schemas/', '')] : schema);

/** A schema that tells a client something: typed, and an object only with its properties named. */
function saysSomething(schema: Json): boolean {
  const s = resolve(schema);
  if (s.anyOf || s.oneOf) return (s.anyOf ?? s.oneOf).every(saysSomething);
  if (s.type === 'string') return true;
  if (s.type === 'array') return s.items !== undefined && saysSomething(s.items);
  return s.type === 'object' && Object.keys(s.properties ?? {}).length > 0 && s.additionalProperties !== true;
}

describe('every relay route in the live /openapi.json', () => {
  it('documents each success answer with a schema that says something, and its errors without a catch-all', () => {
    expect(operations().length).toBe(relay.service.routes.length);
    for (const { route, op } of operations()) {
      const statuses = Object.keys(op.responses as Json);
      expect(statuses, `${route}: a catch-all default hides its errors`).not.toContain('default');
      expect(statuses, route).toContain('500');
      for (const status of statuses) {
        const content = op.responses[status].content as Json;
        for (const [media, { schema }] of Object.entries(content) as [string, { schema: Json }][]) {
          if (status.startsWith('2')) expect(schema && saysSomething(schema), `${route} ${status} ${media}: ${JSON.stringify(schema)}`).toBe(true);
          else expect(schema.$ref, `${route} ${status}`).toBe(status === '422' ? '#/components/schemas/HTTPValidationError' : '#/components/schemas/ErrorDetail');
        }
      }
    }
  });

  it('lists every status the route answers (each route-specific error provoked over HTTP)', async () => {
    const answered: { route: string; status: number }[] = [];
    const hit = async (route: string, path: string, options: Parameters<typeof call>[3] = {}) => {
      const answer = await call(relay.baseUrl, route.split(' ')[0]!, path, options);
      answered.push({ route, status: answer.status });
      return answer;
    };
    const claim = { kind: 'statement', title: 'statuses', body: '' };
    const item = await postClaim(relay, operator, claim);
    const missing = 'f'.repeat(64);
    const registration = registrationFor(generateNodeKey(), relay.baseUrl, clock);
    await hit('POST /register', '/register', { body: registration });
    await hit('POST /register', '/register', { body: registration });
    await hit('POST /register', '/register', { body: registrationFor(operatorKey, relay.baseUrl, clock) });
    await hit('POST /register', '/register', { rawBody: 'x', headers: { 'content-type': 'text/plain' } });
    await hit('POST /register', '/register', { rawBody: JSON.stringify({ pad: 'x'.repeat(500_000) }), headers: { 'content-type': 'application/json' } });
    await hit('POST /session', '/session', { body: sessionFor(generateNodeKey(), relay.baseUrl, clock) });
    await hit('POST /login/verify', '/login/verify', { body: { phone: '+41795550000', code: '000000' } });
    await hit('POST /items', '/items', { body: claim, auth: operator.auth });
    await hit('POST /items', '/items', { rawBody: 'x', headers: { 'content-type': 'text/plain' }, auth: operator.auth });
    const vote = voteBy(other, item, 'yes', 'vote', { t: 1, v: [operator.nodeId], i: [] }, clock);
    await hit('POST /items/{id}/vote', `/items/${item}/vote`, { body: vote });
    await hit('POST /items/{id}/vote', `/items/${item}/vote`, { body: vote });
    await hit('POST /items/{id}/vote', `/items/${missing}/vote`, { body: voteBy(other, missing, 'yes', 'vote', { t: 1, v: [operator.nodeId], i: [] }, clock) });
    await hit('POST /items/{id}/vote', `/items/${item}/vote`, { body: voteBy(generateNodeKey(), item, 'yes', 'vote', { t: 1, v: [operator.nodeId], i: [] }, clock) });
    await hit('GET /items/{id}/bulletin/{node}', `/items/${missing}/bulletin/${other.nodeId}`);
    await hit('GET /items/{id}/bulletin/{node}', `/items/${item}/bulletin/not-a-node`);
    await hit('GET /items/{id}', `/items/${missing}`);
    await hit('GET /nodes/{id}', `/nodes/${missing}`);
    await hit('GET /nodes/{id}', '/nodes/not-a-node');
    await hit('GET /items/{id}', '/items/not-an-item');
    await hit('POST /slice/exclude', '/slice/exclude', { body: { node_id: missing }, auth: other.auth });
    const declared = sliceDeclarationBy(other, { t: 1, v: [operator.nodeId] }, clock.nowMs());
    await hit('POST /slice/declare', '/slice/declare', { body: declared });
    await hit('POST /slice/declare', '/slice/declare', { body: sliceDeclarationBy(other, { t: 1, v: [missing] }, clock.nowMs() - 1) });
    await hit('POST /slice/declare', '/slice/declare', { body: sliceDeclarationBy(generateNodeKey(), { t: 1, v: [operator.nodeId] }, clock.nowMs()) });
    await hit('POST /items/{id}/report', `/items/${missing}/report`, { body: { reason: 'spam', note: '' }, auth: other.auth });
    await hit('POST /invites/accept', '/invites/accept', { body: { code: 'AAAAAAAAAAAA' }, auth: other.auth });
    const pair = String((await call(relay.baseUrl, 'POST', '/pair/start', { body: {}, auth: operator.auth })).body.token);
    await hit('POST /pair/confirm', '/pair/confirm', { body: { token: pair }, auth: operator.auth });
    await hit('GET /pair/{token}', '/pair/unknown-token');
    await hit('GET /pair/{token}/qr', '/pair/unknown-token/qr');
    await hit('POST /reach', '/reach', { body: { url: 'http://127.0.0.1:9/' }, auth: operator.auth });
    await hit('POST /reach', '/reach', { body: { url: 'http://peer.example/' }, auth: other.auth });
    await hit('POST /reach/probe', '/reach/probe', { body: { url: 'http://unknown.example/' }, auth: operator.auth });
    await hit('POST /federation/pull', '/federation/pull', { body: { url: 'http://unknown.example/' }, auth: operator.auth });
    await hit('GET /events', '/events?limit=501');
    await hit('GET /me', '/me', { auth: 'Bearer nonsense' });

    const documented = new Map(operations().map(({ route, op }) => [route, Object.keys(op.responses as Json).map(Number)]));
    expect(answered.filter(({ route, status }) => !documented.get(route)?.includes(status)).map(({ route, status }) => `${route} answered ${status}`)).toEqual([]);
    // Not vacuous: the calls above reached the error paths, not only successes.
    const statuses = new Set(answered.map((a) => a.status));
    for (const s of [200, 201, 401, 403, 404, 409, 413, 415, 422]) expect(statuses, `some call answered ${s}`).toContain(s);
  });

  it('agrees with the table "Error statuses per route" in docs/relay-api.md', () => {
    const doc = readFileSync(new URL('../../docs/relay-api.md', import.meta.url), 'utf8');
    const table = doc.split('### Error statuses per route')[1]!.split('\n## ')[0]!;
    const documented = new Map(operations().map(({ route, op }) => [route, Object.keys(op.responses as Json).map(Number)]));
    let rows = 0;
    const disagreements: string[] = [];
    for (const line of table.split('\n')) {
      const cells = /^\| ((?:GET|POST) [^|]+) \| ([^|]+) \|$/.exec(line);
      if (!cells) continue;
      rows += 1;
      const method = cells[1]!.split(' ')[0]!;
      const routes = cells[1]!.slice(method.length + 1).split(', ').map((p) => `${method} ${p.trim()}`);
      const statuses = [...cells[2]!.matchAll(/\b([45]\d\d)\b/g)].map((m) => Number(m[1]));
      for (const route of routes) for (const status of statuses) if (!documented.get(route)?.includes(status)) disagreements.push(`docs say ${route} answers ${status}`);
    }
    expect(rows).toBeGreaterThan(20);
    expect(disagreements, 'docs/relay-api.md and /openapi.json disagree').toEqual([]);
  });
});
