import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { claimId } from '../../core/relay/claim.js';
import { call, postClaim, registerNode, relayForTests, relayLimits } from '../support/relay-test-kit.js';

/** The relay's claim items (ids, bounds, listing) and reports on items, over HTTP. */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const { relay, alice } = relayForTests({ clock, nodes: ['alice'] });
let seq = 0;
const uniqueTitle = () => `claim ${seq++}`;

const post = (path: string, body: unknown, auth = alice.auth) => call(relay.baseUrl, 'POST', path, { body, auth });

describe('claims', () => {
  it('the id is sha256("x.claim/1\\n" + kind + "\\n" + title + "\\n" + body); posting again is idempotent', async () => {
    const claim = { kind: 'measurement', title: 'UART at 115200', body: 'three runs' };
    const expected = createHash('sha256').update(`x.claim/1\n${claim.kind}\n${claim.title}\n${claim.body}`).digest('hex');
    const first = await post('/items', claim);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ id: expected, type: 'claim', author: alice.nodeId, created: true });
    const again = await post('/items', claim);
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
    const got = await call(relay.baseUrl, 'GET', `/items/${expected}`);
    expect(got.body).toMatchObject({ id: expected, title: claim.title, body: claim.body });
  });

  it('title: 200 code points pass, 201 are refused (astral characters count once)', async () => {
    const astral = '😀'.repeat(relayLimits.titleMaxChars);
    const ok = await post('/items', { kind: 'statement', title: astral, body: '' });
    expect(ok.status).toBe(201);
    expect(ok.body.id).toBe(claimId({ kind: 'statement', title: astral, body: '' }));
    const tooLong = await post('/items', { kind: 'statement', title: 'a'.repeat(relayLimits.titleMaxChars + 1), body: '' });
    expect(tooLong.status).toBe(422);
    expect((tooLong.body.detail as unknown[])[0]).toMatchObject({ type: 'string_too_long', loc: ['body', 'title'], ctx: { max_length: 200 } });
  });

  it('body: 32000 code points pass, 32001 are refused', async () => {
    expect((await post('/items', { kind: 'statement', title: uniqueTitle(), body: 'b'.repeat(relayLimits.bodyMaxChars) })).status).toBe(201);
    const r = await post('/items', { kind: 'statement', title: uniqueTitle(), body: 'b'.repeat(relayLimits.bodyMaxChars + 1) });
    expect(r.status).toBe(422);
    expect((r.body.detail as unknown[])[0]).toMatchObject({ type: 'string_too_long', loc: ['body', 'body'] });
  });

  it('kind and title may not contain a line break; kind must be known; nothing is stored', async () => {
    const before = (await call(relay.baseUrl, 'GET', '/network')).body.counts as { items: number };
    for (const claim of [
      { kind: 'statement', title: 'two\nlines', body: '' },
      { kind: 'state\nment', title: 't', body: '' },
      { kind: 'gossip', title: 't', body: '' },
    ]) {
      const r = await post('/items', claim);
      expect(r.status, JSON.stringify(claim)).toBe(422);
    }
    const after = (await call(relay.baseUrl, 'GET', '/network')).body.counts as { items: number };
    expect(after.items).toBe(before.items);
  });

  it('a bot can post for its node', async () => {
    const bot = await post('/bots', { name: 'poster' });
    const r = await post('/items', { kind: 'observation', title: uniqueTitle(), body: '' }, String(bot.body.authorization));
    expect(r.status).toBe(201);
    expect(r.body.author).toBe(alice.nodeId);
  });

  it('lists items newest first with a cursor', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await postClaim(relay, alice.auth, { kind: 'statement', title: uniqueTitle(), body: '' }));
    const page = await call(relay.baseUrl, 'GET', '/items?limit=2');
    expect((page.body.items as { id: string }[]).map((i) => i.id)).toEqual([ids[2], ids[1]]);
    const next = await call(relay.baseUrl, 'GET', `/items?limit=2&after=${String(page.body.next)}`);
    expect((next.body.items as { id: string }[])[0]!.id).toBe(ids[0]);
  });
});

describe('reports', () => {
  it('files one report per node per item and lists the caller\'s reports', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'statement', title: uniqueTitle(), body: '' });
    const reporter = await registerNode(relay, clock);
    expect((await post(`/items/${id}/report`, { reason: 'spam', note: 'ad' }, reporter.auth)).status).toBe(201);
    expect((await post(`/items/${id}/report`, { reason: 'misleading' }, reporter.auth)).status).toBe(201);
    expect((await post(`/items/${id}/report`, { reason: 'because' }, reporter.auth)).status).toBe(422);
    expect((await post(`/items/${'7'.repeat(64)}/report`, { reason: 'spam' }, reporter.auth)).status).toBe(404);
    const mine = await call(relay.baseUrl, 'GET', '/report', { auth: reporter.auth });
    expect(mine.body.reports).toEqual([expect.objectContaining({ item: id, reason: 'misleading' })]);
    expect((await call(relay.baseUrl, 'GET', `/items/${id}`)).body.reports).toBe(1);
    expect(((await call(relay.baseUrl, 'GET', '/report', { auth: alice.auth })).body.reports as unknown[]).some((r) => (r as { item: string }).item === id)).toBe(false);
  });
});
