import { createClock } from '@sinonjs/fake-timers';
import { beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { TEST_START_MS } from '../support/bench-test-app.js';
import { INPUT_MAX_DEPTH, TRUNCATED } from '../../server/http/bounded-input.js';
import { memoryLogger } from '../../server/http/logger.js';
import { call, registerNode, relayForTests, type TestNode } from '../support/relay-test-kit.js';
import { nestedJson } from '../fuzz/fuzz-bodies.js';

/**
 * Issue 9: JSON nested 4 500 deep sent to a relay JSON route got a 422 whose echoed `input` could
 * not be serialised (stack overflow), so express answered its HTML error page naming server paths;
 * a quorum set nested 1 000 deep overflowed the validator (500). Errors are JSON, `input` is
 * bounded, and depth is refused before any recursive walk.
 */
const fake = createClock(TEST_START_MS);
const clock = clockFromFakeTimers(fake);
const logger = memoryLogger();
const { relay } = relayForTests({ clock, dataDirPrefix: 'relay-deep-', relay: { logger } });
let human: TestNode;

beforeAll(async () => {
  human = await registerNode(relay, clock);
});

const postRaw = (path: string, body: string, auth?: string) =>
  call(relay.baseUrl, 'POST', path, { rawBody: body, headers: { 'content-type': 'application/json' }, ...(auth ? { auth } : {}) });

/** How deep a JSON value goes (the input itself is 1). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

describe('deeply nested JSON on the relay JSON routes', () => {
  it.each(['/register', '/login/verify', '/pair/confirm', '/recover/start', '/recover/finish', '/session', '/login'])('%s: a 422 in JSON with a bounded input', async (path) => {
    // With a credential: /pair/confirm needs one before it reads the body; the others ignore it.
    // The clock moves on so the sign-in rate limits never answer first.
    fake.tick(60_000);
    const answer = await postRaw(path, nestedJson(4500), human.auth);
    expect(answer.status).toBe(422);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.text).not.toMatch(/<html|node_modules|\n\s+at /i);
    const detail = (answer.body as { detail: { input: unknown }[] }).detail;
    expect(detail.length).toBeGreaterThan(0);
    for (const item of detail) expect(depthOf(item.input)).toBeLessThanOrEqual(INPUT_MAX_DEPTH);
    expect(JSON.stringify(detail)).toContain(TRUNCATED);
  });

  it('a JSON body that does not parse is a 422 json_invalid, never an HTML page', async () => {
    const answer = await postRaw('/register', '{"a":'.repeat(100));
    expect(answer.status).toBe(422);
    expect((answer.body as { detail: { type: string }[] }).detail[0]!.type).toBe('json_invalid');
  });

  it('nothing was logged as an unexpected error', () => {
    expect(logger.lines.filter((l) => /unexpected|failed/.test(l))).toEqual([]);
  });
});

describe('POST /slice with a quorum set nested far too deep', () => {
  const nested = (depth: number) => '{"i":['.repeat(depth) + `{"v":["${'a'.repeat(64)}"]}` + ']}'.repeat(depth);
  const tooDeep = { type: 'value_error', loc: ['body', 'i', '0', 'i', '0', 'i', '0', 'i'], msg: 'Value error, quorum sets nest at most 4 deep', ctx: { max_depth: 4 } };

  it.each([5, 800, 1000, 10_000])('%i deep: the same 422 naming the first set too deep', async (depth) => {
    const answer = await postRaw('/slice', nested(depth), human.auth);
    expect(answer.status).toBe(422);
    const detail = (answer.body as { detail: Record<string, unknown>[] }).detail;
    expect(detail).toHaveLength(1);
    expect(detail[0]).toMatchObject(tooDeep);
  });
});
