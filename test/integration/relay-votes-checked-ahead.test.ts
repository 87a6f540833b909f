import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { SignatureThread } from '../../server/relay/domain/signature-thread.js';
import { call, postClaim, registerNode, relayForTests, voteBy, type TestNode } from '../support/relay-test-kit.js';

/**
 * A lone vote of a registered voter is stored while its signature is checked on the relay's
 * signature thread, and committed only if it passes (decision 1090). Through HTTP, with the real
 * thread started first: a forged vote gets the answer a vote checked first gets (422 at
 * `["body", "sig"]`) and leaves nothing behind, not even in the relay node's tally; genuine votes
 * are taken. The thread's ask count shows each went ahead.
 */
const fakeTimers = createClock(Date.UTC(2026, 10, 30, 9));
const clock = clockFromFakeTimers(fakeTimers);
const thread = new SignatureThread();
let alice: TestNode;
let bob: TestNode;
let carol: TestNode;
const { relay } = relayForTests({ clock, dataDirPrefix: 'relay-checked-ahead-', relay: { signatureChecksAhead: thread } });

beforeAll(async () => {
  await thread.started();
  [alice, bob, carol] = [await registerNode(relay, clock), await registerNode(relay, clock), await registerNode(relay, clock)];
});
afterAll(() => thread.close());

describe('POST /items/{id}/vote checked ahead', () => {
  it('refuses a forged vote as one checked first, stores nothing of it, and takes the genuine votes after it', async () => {
    const item = await postClaim(relay, alice, { kind: 'statement', title: 'checked ahead', body: '' });
    const slice = { t: 1, v: [carol.nodeId], i: [] };
    const genuine = voteBy(bob, item, 'yes', 'vote', slice, clock);
    const forged = { ...genuine, sig: voteBy(alice, item, 'yes', 'vote', slice, clock).sig };
    const asked = thread.lastSeq;
    const refused = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: forged });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'sig'], msg: "Value error, sig is not the voter's Ed25519 signature over this vote", input: forged.sig }] });
    expect(thread.lastSeq).toBe(asked + 1);
    const events = (await call<{ events: { kind: string }[] }>(relay.baseUrl, 'GET', `/events?authors=${bob.nodeId}`)).body.events;
    expect(events.filter((e) => e.kind === 'vote')).toEqual([]);
    const before = await call<{ counts: { yes: { vote: number } } }>(relay.baseUrl, 'GET', `/items/${item}/bulletin/${relay.service.nodeId}`);
    expect(before.body.counts.yes.vote).toBe(0);

    // A forgery pauses checks ahead for a while (decision 1090): this vote is checked first, then taken.
    const taken = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: genuine });
    expect([taken.status, taken.body.stored]).toEqual([201, true]);
    expect(thread.lastSeq).toBe(asked + 1);
    fakeTimers.tick(60_000);
    await thread.idle();
    const next = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(carol, item, 'yes', 'vote', { t: 1, v: [bob.nodeId], i: [] }, clock) });
    expect([next.status, next.body.stored]).toEqual([201, true]);
    expect(thread.lastSeq).toBe(asked + 2);
    const after = await call<{ counts: { yes: { vote: number } } }>(relay.baseUrl, 'GET', `/items/${item}/bulletin/${relay.service.nodeId}`);
    expect(after.body.counts.yes.vote).toBe(2);
  });
});

describe('POST /items/{id}/vote when the signature thread cannot start', () => {
  const lostCauses: unknown[] = [];
  const failing = new SignatureThread({
    onLost: (cause) => lostCauses.push(cause),
    startWorker: () => {
      throw new Error('test: no thread can be started here');
    },
  });
  const { relay: other } = relayForTests({ clock, dataDirPrefix: 'relay-thread-fails-', relay: { signatureChecksAhead: failing } });

  it('checks lone votes first, taking the genuine and refusing the forged as ever, and tries the thread only once', async () => {
    const [dave, erin] = [await registerNode(other, clock), await registerNode(other, clock)];
    const item = await postClaim(other, dave, { kind: 'statement', title: 'no thread', body: '' });
    const genuine = voteBy(erin, item, 'yes', 'vote', { t: 1, v: [dave.nodeId], i: [] }, clock);
    const taken = await call(other.baseUrl, 'POST', `/items/${item}/vote`, { body: genuine });
    expect([taken.status, taken.body.stored]).toEqual([201, true]);
    const forged = { ...voteBy(erin, item, 'yes', 'accept', { t: 1, v: [dave.nodeId], i: [] }, clock), sig: genuine.sig };
    const refused = await call(other.baseUrl, 'POST', `/items/${item}/vote`, { body: forged });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body).toMatchObject({ detail: [{ loc: ['body', 'sig'] }] });
    const next = await call(other.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(dave, item, 'yes', 'vote', { t: 1, v: [erin.nodeId], i: [] }, clock) });
    expect([next.status, next.body.stored]).toEqual([201, true]);
    expect(lostCauses).toHaveLength(1);
    expect(failing.lastSeq).toBe(0);
  });
});
