import { createClock } from '@sinonjs/fake-timers';
import { beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, relayForTests, voteBy, type TestNode } from '../support/relay-test-kit.js';

/**
 * A vote's `hint` is unsigned, so anyone holding a signed vote may send it with any hint. One
 * nested 10 000 deep parsed, then overflowed the stack where the relay serialised it to store it:
 * a 500. It is a 422 at `["body", "hint"]`, nothing is stored, and the same vote with a plain hint
 * is taken afterwards.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const logger = memoryLogger();
const { relay } = relayForTests({ clock, dataDirPrefix: 'relay-hostile-votes-', relay: { logger, operators: [generateNodeKey().nodeId] } });
let alice: TestNode;
let bob: TestNode;

beforeAll(async () => {
  alice = await registerNode(relay, clock);
  bob = await registerNode(relay, clock);
});

describe('POST /items/{id}/vote with a hint nested deeper than a relay serialises', () => {
  it('is a 422 at the hint and stores nothing; the same vote with a plain hint is taken', async () => {
    const item = await postClaim(relay, alice, { kind: 'statement', title: 'hinted', body: '' });
    const vote = voteBy(bob, item, 'yes', 'vote', { t: 1, v: [alice.nodeId], i: [] }, clock);
    const depth = 10_000;
    const raw = JSON.stringify(vote).replace(/}$/, `,"hint":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    const refused = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { rawBody: raw, headers: { 'content-type': 'application/json' } });
    expect(refused.status, refused.text.slice(0, 200)).toBe(422);
    expect((refused.body as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(['body', 'hint']);
    expect(logger.lines.filter((line) => line.startsWith('error'))).toEqual([]);
    const events = (await call<{ events: { kind: string }[] }>(relay.baseUrl, 'GET', `/events?authors=${bob.nodeId}`)).body.events;
    expect(events.filter((e) => e.kind === 'vote')).toEqual([]);

    const taken = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: { ...vote, hint: { via: ['a relay'] } } });
    expect([taken.status, taken.body.stored]).toEqual([201, true]);
  });
});

describe('POST /items/{id}/vote with a hint longer than 4096 bytes of JSON', () => {
  it('is a 422 at the hint whether or not the vote is already stored, and a stored hint stays as first sent', async () => {
    const item = await postClaim(relay, alice, { kind: 'statement', title: 'long hint', body: '' });
    const vote = voteBy(bob, item, 'yes', 'vote', { t: 1, v: [alice.nodeId], i: [] }, clock);
    const long = { note: 'x'.repeat(400_000) };
    const refused = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: { ...vote, hint: long } });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toMatchObject([{ loc: ['body', 'hint'], msg: 'Value error, hint is at most 4096 bytes of JSON', type: 'value_error', ctx: { max_bytes: 4096 } }]);
    const events = (await call<{ events: { kind: string }[] }>(relay.baseUrl, 'GET', `/events?authors=${bob.nodeId}&kinds=vote`)).body.events;
    expect(events.filter((e) => JSON.stringify(e).includes(item))).toEqual([]);

    const taken = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: { ...vote, hint: { via: 'a relay' } } });
    expect([taken.status, taken.body.stored]).toEqual([201, true]);
    const again = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: { ...vote, hint: long } });
    expect(again.status).toBe(422);
    const served = (await call<{ events: { kind: string; data: { vote: { hint?: unknown } } }[] }>(relay.baseUrl, 'GET', `/events?authors=${bob.nodeId}`)).body.events;
    const hints = served.filter((e) => e.kind === 'vote' && JSON.stringify(e).includes(item)).map((e) => e.data.vote.hint);
    expect(hints).toEqual([{ via: 'a relay' }]);
  });
});
