import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { claimKinds } from '../../server/relay/protocol.js';
import { call, registerNode, startRelayServer, tempDataDir, type RunningRelay, type TestNode } from '../../server/relay/testing/relay-test-kit.js';

/** Audit finding 6: /openapi.json and the request schemas it documents. */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
let relay: RunningRelay;
let alice: TestNode;
let bob: TestNode;
let openapi: { components: { schemas: Record<string, Record<string, unknown>> }; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>> };

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
  alice = await registerNode(relay, clock, { name: 'alice' });
  bob = await registerNode(relay, clock, { name: 'bob' });
  openapi = (await call(relay.baseUrl, 'GET', '/openapi.json')).body as unknown as typeof openapi;
});
afterAll(async () => {
  await relay.close();
  data.remove();
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
