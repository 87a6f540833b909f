import { createClock } from '@sinonjs/fake-timers';
import { beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { call, registerNode, relayForTests, type TestNode } from '../support/relay-test-kit.js';

/**
 * Every relay route that reads a JSON body answers 415 to a body declared as something else, as
 * `POST /items` and the bench service always did. Before, express.json skipped such a body, the
 * route validated `{}` and answered 422 `dict_type` (the vote route, `/slice/declare`), or took the
 * request with its body ignored where every field is optional. The routes are read from
 * /openapi.json, so a new JSON route is covered without touching this test.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));
const { relay } = relayForTests({ clock, dataDirPrefix: 'relay-body-media-type-' });
let alice: TestNode;

type Operation = { requestBody?: { content: Record<string, unknown> }; 'x-credential'?: string };
let jsonRoutes: { path: string; credential: string }[];

beforeAll(async () => {
  alice = await registerNode(relay, clock);
  const openapi = (await call(relay.baseUrl, 'GET', '/openapi.json')).body as unknown as { paths: Record<string, Record<string, Operation>> };
  jsonRoutes = Object.entries(openapi.paths).flatMap(([path, operations]) => {
    const post = operations.post;
    const types = Object.keys(post?.requestBody?.content ?? {});
    return post && types.length === 1 && types[0] === 'application/json' ? [{ path, credential: post['x-credential'] ?? 'none' }] : [];
  });
});

/** A path with its `{parameters}` filled by something of the right shape (the 415 comes first). */
function concrete(path: string): string {
  return path.replace(/\{[^}]+\}/g, 'a'.repeat(64));
}

describe('a JSON route sent a body that is not JSON', () => {
  it('is a 415 naming the media type on every route that reads JSON (human credential where one is needed)', async () => {
    const checked = jsonRoutes.filter((r) => r.credential !== 'bot');
    expect(checked.map((r) => r.path)).toEqual(expect.arrayContaining(['/items/{id}/vote', '/slice/declare', '/slice', '/register']));
    for (const { path, credential } of checked) {
      const auth = credential === 'none' || credential === 'signature' ? {} : { auth: alice.auth };
      const answer = await call(relay.baseUrl, 'POST', concrete(path), { ...auth, rawBody: '{}', headers: { 'content-type': 'text/plain' } });
      expect([path, answer.status, answer.body.detail]).toEqual([path, 415, 'Unsupported media type: the body must be JSON (content-type: application/json), not text/plain']);
    }
  });

  it('keeps the usual answer for a request without a body, and for the same body sent as JSON', async () => {
    const bare = await call(relay.baseUrl, 'POST', '/slice/declare', {});
    expect(bare.status).toBe(422);
    const asJson = await call(relay.baseUrl, 'POST', '/slice/declare', { rawBody: '{}', headers: { 'content-type': 'application/json' } });
    expect(asJson.status).toBe(422);
  });
});
