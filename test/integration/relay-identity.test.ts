import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { signDocument } from '../../server/relay/domain/signed-document.js';
import { call, nowSeconds, registerNode, registrationFor, relayForTests, sessionFor } from '../support/relay-test-kit.js';

const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const { relay } = relayForTests({ clock });

describe('POST /register: proving the node key', () => {
  it('registers with a signed document and answers the human credential', async () => {
    const key = generateNodeKey();
    const r = await call(relay.baseUrl, 'POST', '/register', { body: registrationFor(key, relay.baseUrl, clock, 'dora') });
    expect(r.status).toBe(201);
    expect(r.body.node_id).toBe(key.nodeId);
    expect(r.body.authorization).toBe(`Bearer ${String(r.body.credential)}`);
    const me = await call(relay.baseUrl, 'GET', '/me', { auth: String(r.body.authorization) });
    expect(me.status).toBe(200);
    expect((me.body.node as { name: string }).name).toBe('dora');
  });

  it('refuses a document signed by another key, and changes nothing', async () => {
    const key = generateNodeKey();
    const other = generateNodeKey();
    const doc = signDocument({ schema: 'x.register/1', node_id: key.nodeId, relay: relay.baseUrl, created_at: nowSeconds(clock) }, other.secretKey);
    const r = await call(relay.baseUrl, 'POST', '/register', { body: doc });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([expect.objectContaining({ type: 'value_error', loc: ['body', 'sig'] })]);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${key.nodeId}`)).status).toBe(404);
  });

  it('refuses a changed field after signing', async () => {
    const key = generateNodeKey();
    const doc = { ...registrationFor(key, relay.baseUrl, clock, 'eve'), name: 'mallory' };
    expect((await call(relay.baseUrl, 'POST', '/register', { body: doc })).status).toBe(422);
  });

  it('refuses a document for another relay and a stale one', async () => {
    const key = generateNodeKey();
    const elsewhere = registrationFor(key, 'http://other.example', clock);
    const a = await call(relay.baseUrl, 'POST', '/register', { body: elsewhere });
    expect(a.status).toBe(422);
    expect((a.body.detail as { loc: string[] }[])[0]!.loc).toEqual(['body', 'relay']);
    const stale = signDocument({ schema: 'x.register/1', node_id: key.nodeId, relay: relay.baseUrl, created_at: nowSeconds(clock) - 301 }, key.secretKey);
    const b = await call(relay.baseUrl, 'POST', '/register', { body: stale });
    expect(b.status).toBe(422);
    expect((b.body.detail as { loc: string[] }[])[0]!.loc).toEqual(['body', 'created_at']);
  });

  it('a signed document works once: a replay is refused with 409', async () => {
    const key = generateNodeKey();
    const doc = registrationFor(key, relay.baseUrl, clock);
    expect((await call(relay.baseUrl, 'POST', '/register', { body: doc })).status).toBe(201);
    const replay = await call(relay.baseUrl, 'POST', '/register', { body: doc });
    expect(replay.status).toBe(409);
    fake.tick(1000);
    const again = await call(relay.baseUrl, 'POST', '/register', { body: registrationFor(key, relay.baseUrl, clock) });
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
  });

  it('refuses small-order (all-zero and identity) public keys', async () => {
    const zero = '0'.repeat(64);
    const identity = '01' + '0'.repeat(62);
    for (const nodeId of [zero, identity]) {
      const doc = { schema: 'x.register/1', node_id: nodeId, relay: relay.baseUrl, created_at: nowSeconds(clock), sig: 'A'.repeat(86) };
      const r = await call(relay.baseUrl, 'POST', '/register', { body: doc });
      expect(r.status, nodeId).toBe(422);
      expect((r.body.detail as { loc: string[]; msg: string }[])[0]).toMatchObject({ loc: ['body', 'node_id'], msg: expect.stringMatching(/small-order|not a point|non-canonical/) });
    }
  });

  it('validation errors follow the FastAPI shape with keys in order', async () => {
    const r = await call(relay.baseUrl, 'POST', '/register', { body: { schema: 'x.register/1', node_id: 'nope' } });
    expect(r.status).toBe(422);
    const detail = r.body.detail as Record<string, unknown>[];
    expect(detail.length).toBeGreaterThan(1);
    for (const issue of detail) expect(Object.keys(issue).slice(0, 4)).toEqual(['type', 'loc', 'msg', 'input']);
    expect(detail).toContainEqual({ type: 'missing', loc: ['body', 'sig'], msg: 'Field required', input: null });
    const badJson = await call(relay.baseUrl, 'POST', '/register', { rawBody: '{"schema":', headers: { 'content-type': 'application/json' } });
    expect(badJson.status).toBe(422);
    expect((badJson.body.detail as { type: string }[])[0]!.type).toBe('json_invalid');
  });

  it('JSON that does not parse is FastAPI\'s json_invalid at the position of the error, from either body parser', async () => {
    // The plain parser (plainJsonBody) and express.json (another JSON media type) answer alike;
    // the `}` at character 11 counts "é" once (Python's positions are characters).
    for (const type of ['application/json', 'application/merge-patch+json']) {
      const r = await call(relay.baseUrl, 'POST', '/register', { rawBody: '{"schéma": }', headers: { 'content-type': type } });
      expect([r.status, r.body.detail], type).toEqual([422, [{ type: 'json_invalid', loc: ['body', 11], msg: 'JSON decode error', input: {}, ctx: { error: "Unexpected token '}'" } }]]);
    }
  });

  it('a body that is well-formed JSON but no object is a 422 model_attributes_type, as FastAPI answers, not a decode error', async () => {
    const node = await registerNode(relay, clock);
    for (const [path, auth] of [['/register', undefined], ['/me', node.auth], ['/invites/accept', node.auth]] as const) {
      for (const raw of ['"x"', '1', 'true', 'null']) {
        const r = await call(relay.baseUrl, 'POST', path, { rawBody: raw, headers: { 'content-type': 'application/json' }, ...(auth ? { auth } : {}) });
        expect(r.status, `${path} ${raw}`).toBe(422);
        // null included: it is not "no body" (which keeps its usual answer), so POST /me with it changes nothing.
        expect(r.body.detail, `${path} ${raw}`).toEqual([{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: JSON.parse(raw) }]);
      }
    }
  });
});

describe('POST /session', () => {
  it('answers the current credential to a key holder, refuses unknown nodes', async () => {
    const node = await registerNode(relay, clock);
    const r = await call(relay.baseUrl, 'POST', '/session', { body: sessionFor(node, relay.baseUrl, clock) });
    expect(r.status).toBe(200);
    expect(r.body.authorization).toBe(node.auth);
    const stranger = generateNodeKey();
    expect((await call(relay.baseUrl, 'POST', '/session', { body: sessionFor(stranger, relay.baseUrl, clock) })).status).toBe(404);
  });
});

describe('/me, bots, export', () => {
  it('updates name and about, refuses a newline in the name', async () => {
    const node = await registerNode(relay, clock);
    const ok = await call(relay.baseUrl, 'POST', '/me', { body: { name: 'frank', about: 'bench person' }, auth: node.auth });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: 'frank', about: 'bench person' });
    const bad = await call(relay.baseUrl, 'POST', '/me', { body: { name: 'a\nb' }, auth: node.auth });
    expect(bad.status).toBe(422);
    expect((await call(relay.baseUrl, 'GET', '/me', { auth: node.auth })).body.node).toMatchObject({ name: 'frank' });
  });

  it('a bot acts for its node; its token is stored hashed', async () => {
    const node = await registerNode(relay, clock);
    const bot = await call(relay.baseUrl, 'POST', '/bots', { body: { name: 'ci-bot' }, auth: node.auth });
    expect(bot.status).toBe(201);
    const token = String(bot.body.token);
    const me = await call(relay.baseUrl, 'GET', '/bots/me', { auth: `Bot ${token}` });
    expect(me.body).toMatchObject({ name: 'ci-bot', owner: node.nodeId, bot_id: bot.body.bot_id });
    const asBot = await call(relay.baseUrl, 'GET', '/me', { auth: `Bot ${token}` });
    expect(asBot.body).toMatchObject({ caller: 'bot', node: { node_id: node.nodeId } });
    const stored = JSON.stringify(relay.service.routes.length) + JSON.stringify(await call(relay.baseUrl, 'GET', '/me/export', { auth: node.auth }));
    expect(stored).not.toContain(token);
    const empty = await call(relay.baseUrl, 'POST', '/bots', { body: { name: '' }, auth: node.auth });
    expect(empty.status).toBe(422);
  });

  it('export holds what the node owns', async () => {
    const node = await registerNode(relay, clock, { name: 'gina' });
    const item = await call(relay.baseUrl, 'POST', '/items', { body: { kind: 'statement', title: 'exported claim', body: '' }, auth: node.auth });
    await call(relay.baseUrl, 'POST', '/invites', { auth: node.auth });
    await call(relay.baseUrl, 'POST', '/slice', { body: { v: [relay.service.nodeId] }, auth: node.auth });
    await call(relay.baseUrl, 'POST', `/items/${String(item.body.id)}/report`, { body: { reason: 'duplicate' }, auth: node.auth });
    const r = await call(relay.baseUrl, 'GET', '/me/export', { auth: node.auth });
    expect(r.status).toBe(200);
    expect(r.body.node).toMatchObject({ node_id: node.nodeId, name: 'gina' });
    expect((r.body.items as { id: string }[]).map((i) => i.id)).toEqual([item.body.id]);
    expect(r.body.invites as unknown[]).toHaveLength(1);
    expect(r.body.reports as unknown[]).toHaveLength(1);
    expect(r.body.slice).toMatchObject({ qset: { t: 1, v: [relay.service.nodeId] } });
    expect((r.body.events as { kind: string }[]).map((e) => e.kind)).toEqual(['node', 'item', 'slice']);
  });
});
