import { createClock } from '@sinonjs/fake-timers';
import { beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import type { z } from 'zod';
import { claimKinds } from '../../core/relay/claim.js';
import { meSchema, nodesPageSchema } from '../../wire/relay/identity-responses.js';
import { bulletinSchema, itemDetailSchema, itemsPageSchema } from '../../wire/relay/item-responses.js';
import { eventsPageSchema, healthSchema } from '../../wire/relay/network-responses.js';
import { call, postClaim, relayForTests, voteBy, type TestNode } from '../support/relay-test-kit.js';

/** Request and response schemas: strict where the spec says so, and documented in /openapi.json as enforced. */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const { relay, alice, bob } = relayForTests({ clock, nodes: ['alice', 'bob'] });
let openapi: { components: { schemas: Record<string, Record<string, unknown>> }; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>> };

beforeAll(async () => {
  openapi = (await call(relay.baseUrl, 'GET', '/openapi.json')).body as unknown as typeof openapi;
});

const sliceEvents = async (node: TestNode) => ((await call(relay.baseUrl, 'GET', `/events?authors=${node.nodeId}`)).body.events as { kind: string }[]).filter((e) => e.kind === 'slice').length;

describe('POST /slice is strict, like the slice inside a vote', () => {
  it.each([
    ['a top-level key', { t: 1, v: ['B'], threshold: 1 }, ['body', 'threshold']],
    ['a key in an inner set', { t: 1, v: [], i: [{ t: 1, v: ['B'], x: true }] }, ['body', 'i', 0, 'x']],
  ])('an unknown key (%s) is 422 extra_forbidden at its place, and nothing is published', async (_name, raw, loc) => {
    const body = JSON.parse(JSON.stringify(raw).replaceAll('"B"', JSON.stringify(bob.nodeId))) as unknown;
    const before = await sliceEvents(alice);
    const r = await call(relay.baseUrl, 'POST', '/slice', { body, auth: alice.auth });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([expect.objectContaining({ type: 'extra_forbidden', loc })]);
    expect(await sliceEvents(alice)).toBe(before);
  });

  it('the same slice without the unknown key is published', async () => {
    const r = await call(relay.baseUrl, 'POST', '/slice', { body: { t: 1, v: [bob.nodeId] }, auth: alice.auth });
    expect(r.status).toBe(200);
  });
});

describe('/openapi.json', () => {
  it('ClaimCreate documents kind as an enum of the claim kinds; QuorumSet forbids unknown keys', () => {
    const claim = openapi.components.schemas.ClaimCreate as { properties: { kind: { enum?: unknown } } };
    expect(claim.properties.kind.enum).toEqual([...claimKinds]);
    expect(openapi.components.schemas.QuorumSet).toMatchObject({ additionalProperties: false });
  });
});

describe('response schemas of the main routes', () => {
  let claim: string;
  let file: string;
  let botAuth: string;
  beforeAll(async () => {
    claim = await postClaim(relay, alice.auth, { kind: 'statement', title: 'documented answers', body: 'text' });
    const form = new FormData();
    form.append('title', 'an image');
    form.append('file', new Blob([new TextEncoder().encode('bytes of a documented file')]), 'fw.bin');
    file = String((await call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth })).body.id);
    expect((await call(relay.baseUrl, 'POST', `/items/${claim}/vote`, { body: voteBy(bob, claim, 'yes', 'vote', { t: 1, v: [alice.nodeId], i: [] }, clock) })).status).toBe(201);
    botAuth = String((await call(relay.baseUrl, 'POST', '/bots', { body: { name: 'helper' }, auth: alice.auth })).body.authorization);
  });

  const cases: [string, () => string, z.ZodType, string, string | undefined][] = [
    ['GET /health', () => '/health', healthSchema, 'Health', undefined],
    ['GET /items', () => '/items', itemsPageSchema, 'ItemsPage', undefined],
    ['GET /items/{id} (claim)', () => `/items/${claim}`, itemDetailSchema, 'ItemDetail', undefined],
    ['GET /items/{id} (file, as JSON)', () => `/items/${file}`, itemDetailSchema, 'ItemDetail', undefined],
    ['GET /items/{id}/bulletin/{node}', () => `/items/${claim}/bulletin/${bob.nodeId}`, bulletinSchema, 'Bulletin', undefined],
    ['GET /events', () => '/events?limit=500', eventsPageSchema, 'EventsPage', undefined],
    ['GET /nodes', () => '/nodes', nodesPageSchema, 'NodesPage', undefined],
    ['GET /me (human)', () => '/me', meSchema, 'Me', 'alice'],
    ['GET /me (bot)', () => '/me', meSchema, 'Me', 'bot'],
  ];
  it.each(cases)('%s: the real answer parses with its strict schema, and /openapi.json names it', async (name, path, schema, id, who) => {
    const auth = who === 'alice' ? alice.auth : who === 'bot' ? botAuth : undefined;
    const r = await call(relay.baseUrl, 'GET', path(), { ...(auth ? { auth } : {}), headers: { accept: 'application/json' } });
    expect(r.status).toBe(200);
    const parsed = schema.safeParse(r.body);
    expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    const [, method, route] = /^(\w+) (\S+)/.exec(name)!;
    const content = openapi.paths[route!]![method!.toLowerCase()]!.responses['200']!.content!['application/json']!;
    expect(content.schema).toEqual({ $ref: `#/components/schemas/${id}` });
    expect(openapi.components.schemas[id]).toBeDefined();
  });

  it('a file item answered as JSON has bytes and media_type, a claim its body', async () => {
    expect((await call(relay.baseUrl, 'GET', `/items/${file}`, { headers: { accept: 'application/json' } })).body).toMatchObject({ type: 'file', bytes: 26 });
    expect((await call(relay.baseUrl, 'GET', `/items/${claim}`)).body).toMatchObject({ type: 'claim', body: 'text' });
  });
});
