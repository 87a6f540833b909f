import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { quorumSetHash } from '../../core/relay/quorum-set.js';
import { readSmsOutbox } from '../../server/relay/domain/sms-sender.js';
import { call, claimAuthorship, registerNode, sliceDeclarationBy, registrationFor, sessionFor, startRelayServer, tempDataDir, voteBy, type Answer, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * Issue 18, "an outside client can be written from the documents": every relay route declares its
 * success answer as a zod schema, so /openapi.json documents every success body, and real answers
 * of every route (one successful call each, over HTTP) parse with the schema the route declares.
 */
const fakeTime = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fakeTime);
const data = tempDataDir('relay-answers-');
const upstreamData = tempDataDir('relay-answers-up-');
const operatorKey = generateNodeKey();
let relay: RunningRelay;
let upstream: RunningRelay;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- OpenAPI documents are walked, not typed
let openapi: Json;
/** "METHOD /path" -> the answers seen. */
const answers = new Map<string, Answer<unknown>[]>();

const phoneA = '+41795550101';
const phoneB = '+41795550102';
const lastCode = (to: string) => /\d{6}/.exec(readSmsOutbox(data.dir).filter((m) => m.to === to).at(-1)!.text)![0];

async function hit(method: 'GET' | 'POST', template: string, path: string, options: { body?: unknown; auth?: string; rawBody?: RequestInit['body'] } = {}): Promise<Answer<Json>> {
  const answer = await call<Json>(relay.baseUrl, method, path, options);
  expect(answer.status, `${method} ${path}: ${answer.text.slice(0, 300)}`).toBeLessThan(300);
  answers.set(`${method} ${template}`, [...(answers.get(`${method} ${template}`) ?? []), answer]);
  return answer;
}

beforeAll(async () => {
  upstream = await startRelayServer({ clock, dataDir: upstreamData.dir, logger: memoryLogger() });
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], allowPrivatePeers: true });
  openapi = (await call<Json>(relay.baseUrl, 'GET', '/openapi.json')).body;
  const keyB = generateNodeKey();
  const regA = await hit('POST', '/register', '/register', { body: registrationFor(operatorKey, relay.baseUrl, clock, 'alice') });
  const a: TestNode = { ...operatorKey, auth: String(regA.body.authorization) };
  const b: TestNode = await registerNode(relay, clock, { key: keyB, name: 'bob' });
  await hit('POST', '/session', '/session', { body: sessionFor(keyB, relay.baseUrl, clock) });
  await hit('GET', '/health', '/health');
  await hit('GET', '/examples', '/examples');
  await hit('POST', '/me', '/me', { body: { name: 'alice', about: 'operator' }, auth: a.auth });
  await hit('POST', '/directory', '/directory', { body: { listed: true, phone_discoverable: true }, auth: a.auth });
  await hit('POST', '/me/phone', '/me/phone', { body: { phone: phoneA }, auth: a.auth });
  await hit('POST', '/me/phone/verify', '/me/phone/verify', { body: { phone: phoneA, code: lastCode(phoneA) }, auth: a.auth });
  await hit('POST', '/me/phone', '/me/phone', { body: { phone: phoneB }, auth: b.auth });
  await hit('POST', '/me/phone/verify', '/me/phone/verify', { body: { phone: phoneB, code: lastCode(phoneB) }, auth: b.auth });
  fakeTime.tick(61_000); // one code per number per 60 s
  await hit('POST', '/login', '/login', { body: { phone: phoneA } });
  await hit('POST', '/login/verify', '/login/verify', { body: { phone: phoneA, code: lastCode(phoneA) } });
  const bot = await hit('POST', '/bots', '/bots', { body: { name: 'helper' }, auth: a.auth });
  const botAuth = String(bot.body.authorization);
  await hit('GET', '/bots/me', '/bots/me', { auth: botAuth });
  await hit('GET', '/me', '/me', { auth: a.auth });
  await hit('GET', '/me', '/me', { auth: botAuth });
  await hit('GET', '/lookup', '/lookup?phone=' + encodeURIComponent(phoneA), { auth: b.auth });
  await hit('GET', '/lookup', '/lookup?phone=%2B41795550999', { auth: b.auth });
  const claim = String((await hit('POST', '/items', '/items', { body: { kind: 'statement', title: 'answers documented', body: 'text' }, auth: a.auth })).body.id);
  const signedClaim = { kind: 'statement', title: 'signed by its author', body: '' };
  await hit('POST', '/items', '/items', { body: { ...signedClaim, authorship: claimAuthorship(a, signedClaim) }, auth: a.auth });
  const form = new FormData();
  form.append('file', new Blob([new TextEncoder().encode('file bytes')]), 'fw.bin');
  const file = String((await hit('POST', '/items', '/items', { rawBody: form, auth: botAuth })).body.id);
  await hit('POST', '/slice', '/slice', { body: { t: 1, v: [b.nodeId] }, auth: a.auth });
  await hit('POST', '/slice/include', '/slice/include', { body: { node_id: relay.service.nodeId }, auth: a.auth });
  await hit('POST', '/slice/exclude', '/slice/exclude', { body: { node_id: relay.service.nodeId }, auth: a.auth });
  await hit('POST', '/slice/declare', '/slice/declare', { body: sliceDeclarationBy(b, { t: 1, v: [a.nodeId] }, clock.nowMs()) });
  const sliceA = { t: 1, v: [b.nodeId], i: [] };
  await hit('POST', '/items/{id}/vote', `/items/${claim}/vote`, { body: voteBy(a, claim, 'yes', 'vote', sliceA, clock) });
  await hit('POST', '/items/{id}/vote', `/items/${claim}/vote`, { body: voteBy(a, claim, 'yes', 'vote', sliceA, clock) });
  await hit('POST', '/items/{id}/vote', `/items/${claim}/vote`, { body: voteBy(b, claim, 'yes', 'accept', { t: 1, v: [a.nodeId], i: [] }, clock) });
  expect(quorumSetHash(sliceA)).toMatch(/^[0-9a-f]{64}$/);
  for (const node of [a.nodeId, b.nodeId, relay.service.nodeId, generateNodeKey().nodeId]) await hit('GET', '/items/{id}/bulletin/{node}', `/items/${claim}/bulletin/${node}`);
  await hit('GET', '/items', '/items');
  await hit('GET', '/items/{id}', `/items/${claim}`);
  await hit('GET', '/items/{id}', `/items/${file}`);
  await hit('POST', '/items/{id}/report', `/items/${claim}/report`, { body: { reason: 'spam', note: 'twice' }, auth: b.auth });
  await hit('GET', '/report', '/report', { auth: b.auth });
  const invite = await hit('POST', '/invites', '/invites', { body: {}, auth: a.auth });
  await hit('POST', '/invites/accept', '/invites/accept', { body: { code: invite.body.code }, auth: b.auth });
  await hit('POST', '/invites', '/invites', { body: {}, auth: a.auth });
  await hit('GET', '/invites', '/invites', { auth: a.auth });
  const pairing = await hit('POST', '/pair/start', '/pair/start', { body: {}, auth: a.auth });
  await hit('GET', '/pair/{token}', `/pair/${pairing.body.token}`);
  await hit('GET', '/pair/{token}/qr', `/pair/${pairing.body.token}/qr`);
  await hit('POST', '/pair/confirm', '/pair/confirm', { body: { token: pairing.body.token }, auth: b.auth });
  await hit('GET', '/pair/{token}', `/pair/${pairing.body.token}`);
  await hit('GET', '/search', '/search?q=a');
  await hit('GET', '/nodes', '/nodes');
  await hit('GET', '/nodes/{id}', `/nodes/${a.nodeId}`);
  await hit('GET', '/nodes/{id}', `/nodes/${relay.service.nodeId}`);
  await hit('POST', '/reach', '/reach', { body: { url: upstream.baseUrl }, auth: a.auth });
  await hit('GET', '/relays', '/relays');
  await hit('POST', '/reach/probe', '/reach/probe', { body: {}, auth: a.auth });
  await hit('POST', '/federation/pull', '/federation/pull', { body: {}, auth: a.auth });
  await hit('GET', '/reach', '/reach');
  await hit('GET', '/seeds', '/seeds');
  await hit('GET', '/network', '/network');
  await hit('GET', '/events', '/events?limit=500');
  await hit('GET', '/me/export', '/me/export', { auth: a.auth });
  fakeTime.tick(61_000);
  await hit('POST', '/recover/start', '/recover/start', { body: { phone: phoneB } });
  await hit('POST', '/recover/finish', '/recover/finish', { body: { phone: phoneB, code: lastCode(phoneB) } });
});
afterAll(async () => {
  await relay.close();
  await upstream.close();
  data.remove();
  upstreamData.remove();
});

describe('every relay route documents its success answer', () => {
  it('every route of /openapi.json was called successfully above', () => {
    const served = Object.entries(openapi.paths as Json).flatMap(([p, ops]) => Object.keys(ops as Json).map((m) => `${m.toUpperCase()} ${p}`));
    expect([...answers.keys()].sort()).toEqual(served.sort());
  });

  it('has a success schema in /openapi.json (a binary string for non-JSON answers)', () => {
    for (const r of relay.service.routes) {
      const op = openapi.paths[r.path][r.method] as Json;
      const content = op.responses[String(r.successStatus ?? 200)].content as Json;
      if (r.produces && r.produces !== 'application/json') expect(content[r.produces].schema, `${r.method} ${r.path}`).toEqual({ type: 'string', format: 'binary' });
      else expect(content['application/json'].schema, `${r.method} ${r.path}: no response schema`).toBeDefined();
    }
  });

  it('real answers parse with the schema the route declares', () => {
    for (const r of relay.service.routes) {
      if (r.produces && r.produces !== 'application/json') continue;
      for (const answer of answers.get(`${r.method.toUpperCase()} ${r.path}`) ?? []) {
        const parsed = r.response!.safeParse(answer.body);
        expect(parsed.success, `${r.method} ${r.path}: ${parsed.success ? '' : JSON.stringify(parsed.error.issues.slice(0, 3))}\n${answer.text.slice(0, 400)}`).toBe(true);
      }
    }
  });
});

