import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { voteWriterTestHooks } from '../../server/relay/domain/vote-writer.js';
import { call, postClaim, registerNode, relayForTests, voteBy } from '../support/relay-test-kit.js';

/**
 * POST /items/{id}/vote on the vote writer thread (decision 0921), over HTTP: what the loop had
 * cached of an item is forgotten before a vote's answer is written, and a thread that crashes with
 * a vote waiting answers that vote 503 in the FastAPI shape, is restarted by the next vote, and
 * never takes the relay down.
 */
const fake = createClock(Date.UTC(2026, 10, 29, 12));
const clock = clockFromFakeTimers(fake);
const logger = memoryLogger();
const { relay, alice } = relayForTests({ clock, nodes: ['alice'], relay: { logger } });
const slice = () => ({ t: 1, v: [relay.service.nodeId], i: [] });

afterEach(() => {
  delete voteWriterTestHooks.afterSend;
});

describe('votes on the vote writer thread', () => {
  it("forgets the loop's cached statements and tally of the item before the vote's answer", { timeout: 60_000 }, async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: 'cached', body: '' });
    const bulletin = () => call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${relay.service.nodeId}`);
    // Read first, so the loop holds the item's statements and the relay node's tally.
    expect((await bulletin()).body).toMatchObject({ state: 'uncommitted' });
    expect((await call(relay.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(alice, id, 'yes', 'vote', slice(), clock) })).status).toBe(201);
    expect((await bulletin()).body).toMatchObject({ counts: { yes: { vote: 1 } } });
  });

  it('answers a vote waiting on a crashed thread 503 with its reason, keeps serving, and stores the next vote on a new thread', { timeout: 60_000 }, async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: 'crash', body: '' });
    const bob = await registerNode(relay, clock);
    voteWriterTestHooks.afterSend = (writer) => {
      delete voteWriterTestHooks.afterSend;
      writer.crashForTest();
    };
    const vote = voteBy(bob, id, 'yes', 'vote', slice(), clock);
    const crashed = await call(relay.baseUrl, 'POST', `/items/${id}/vote`, { body: vote });
    expect(crashed.status).toBe(503);
    expect(crashed.headers.get('retry-after')).toBe('1');
    expect(crashed.body).toEqual({ detail: expect.any(String) });
    expect(logger.lines.some((line) => /vote writer thread was ended by a test; 1 vote\(s\) waiting on it fail, and the next vote starts a new thread/.test(line))).toBe(true);
    expect((await call(relay.baseUrl, 'GET', '/health')).status).toBe(200);
    // Sent again: stored by a new thread, or found stored if the crash came after the commit.
    const again = await call(relay.baseUrl, 'POST', `/items/${id}/vote`, { body: vote });
    expect([200, 201]).toContain(again.status);
    expect(again.body).toMatchObject({ item: id, voter: bob.nodeId });
    expect((await call(relay.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(alice, id, 'yes', 'vote', slice(), clock) })).status).toBe(201);
  });
});
