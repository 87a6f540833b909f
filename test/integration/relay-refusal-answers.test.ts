import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { claimId } from '../../core/relay/claim.js';
import { nodeKeyFromSecret, type NodeKey } from '../../core/relay/node-id.js';
import { signDocument } from '../../server/relay/domain/signed-document.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type Answer, call, nowSeconds, registerNode, registrationFor, sessionFor, sliceDeclarationBy, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { expectedRefusals } from './relay-refusal-answers.expected.js';

/**
 * Every refusal the relay's use cases and routes give (decision 0780), answered byte for byte as
 * before they moved out of the route handlers: status, `Retry-After` and the body text. The
 * expected answers (relay-refusal-answers.expected.ts) were recorded from the handlers that built
 * them by hand, before the move; keys are fixed so signatures and ids are the same in every run,
 * and the relay's random port is written `<base>`.
 */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const data = tempDataDir();
const keyOf = (n: number): NodeKey => nodeKeyFromSecret(new Uint8Array(32).fill(n));
const operatorKey = keyOf(1);
let relay: RunningRelay;
let alice: TestNode;
let bob: TestNode;
let operator: TestNode;
const answers: Record<string, string> = {};

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [operatorKey.nodeId] });
  operator = await registerNode(relay, clock, { key: operatorKey });
  alice = await registerNode(relay, clock, { key: keyOf(2) });
  bob = await registerNode(relay, clock, { key: keyOf(3) });
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

/**
 * An answer as compared: status, Retry-After when there is one, and the body's text. `sig`: a
 * signature over something random per run (the port, the relay node's key), written `<sig>`.
 */
function record(name: string, answer: Answer, sig?: string): void {
  const retry = answer.headers.get('retry-after');
  const text = answer.text.split(relay.baseUrl).join('<base>');
  answers[name] = `${answer.status}${retry === null ? '' : ` retry-after=${retry}`} ${sig === undefined ? text : text.split(sig).join('<sig>')}`;
}

const get = (path: string, auth?: string) => call(relay.baseUrl, 'GET', path, auth === undefined ? {} : { auth });
const post = (path: string, body: unknown, auth?: string) => call(relay.baseUrl, 'POST', path, { body, ...(auth === undefined ? {} : { auth }) });
const hex = (c: string) => c.repeat(64);

describe('refusals of the relay, byte for byte', () => {
  it('ids, nodes and the event feed', async () => {
    record('item id', await get('/items/not-an-id'));
    record('item unknown', await get(`/items/${hex('7')}`));
    const item = claimId({ kind: 'question', title: 'refusals', body: '' });
    expect((await post('/items', { kind: 'question', title: 'refusals', body: '' }, alice.auth)).status).toBe(201);
    record('bulletin node', await get(`/items/${item}/bulletin/zz`));
    // A path parameter is checked before anything is looked up, as FastAPI checks it before the handler runs.
    record('bulletin node, item unknown', await get(`/items/${hex('7')}/bulletin/zz`));
    // Both malformed: FastAPI lists every path parameter that fails, in the route's order.
    record('bulletin id and node', await get('/items/not-an-id/bulletin/zz'));
    record('node id', await get('/nodes/zz'));
    record('node unknown', await get(`/nodes/${hex('8')}`));
    record('events limit 0', await get('/events?limit=0'));
    record('events limit 501', await get('/events?limit=501'));
    record('events authors 101', await get(`/events?authors=${Array.from({ length: 101 }, () => 'a').join(',')}`));
    record('events author', await get(`/events?authors=${hex('a')},zz`));
  });

  it('registration and sign-in', async () => {
    const key = keyOf(4);
    record('register other relay', await post('/register', registrationFor(key, 'http://other.example', clock)));
    record('register stale', await post('/register', signDocument({ schema: 'x.register/1', node_id: key.nodeId, relay: relay.baseUrl, created_at: nowSeconds(clock) - 301 }, key.secretKey)));
    const forged = signDocument({ schema: 'x.register/1', node_id: key.nodeId, relay: relay.baseUrl, created_at: nowSeconds(clock) }, keyOf(5).secretKey);
    record('register forged', await post('/register', forged), forged.sig);
    record('register small-order key', await post('/register', signDocument({ schema: 'x.register/1', node_id: hex('0'), relay: relay.baseUrl, created_at: nowSeconds(clock) }, key.secretKey)));
    const once = registrationFor(key, relay.baseUrl, clock);
    expect((await post('/register', once)).status).toBe(201);
    record('register replayed', await post('/register', once));
    record('session unregistered', await post('/session', sessionFor(keyOf(6), relay.baseUrl, clock)));
  });

  it('votes', async () => {
    const item = claimId({ kind: 'question', title: 'votes refused', body: '' });
    expect((await post('/items', { kind: 'question', title: 'votes refused', body: '' }, alice.auth)).status).toBe(201);
    const slice = { t: 1, v: [relay.service.nodeId], i: [] };
    const vote = voteBy(alice, item, 'yes', 'vote', slice, clock);
    record('vote path id', await post('/items/zz/vote', vote));
    record('vote unknown item', await post(`/items/${hex('9')}/vote`, vote));
    record('vote other item', await post(`/items/${item}/vote`, voteBy(alice, hex('9'), 'yes', 'vote', slice, clock)));
    const aheadMs = 400_000;
    fake.setSystemTime(fake.now + aheadMs);
    const future = voteBy(alice, item, 'yes', 'vote', slice, clock);
    fake.setSystemTime(fake.now - aheadMs);
    record('vote future', await post(`/items/${item}/vote`, future));
    record('vote forged', await post(`/items/${item}/vote`, { ...vote, value: 'no' }), vote.sig);
    record('vote unregistered', await post(`/items/${item}/vote`, voteBy(keyOf(7), item, 'yes', 'vote', slice, clock)));
  });

  it('items and slices', async () => {
    const boundary = 'refusalsboundary';
    const form = (headers: string, bytes: string, fields = '') =>
      `${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n${headers}\r\n${bytes}\r\n--${boundary}--\r\n`;
    const upload = (body: string) => call(relay.baseUrl, 'POST', '/items', { rawBody: body, auth: alice.auth, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
    record('file media type', await upload(form(`Content-Type: application/${'x'.repeat(300)}\r\n`, 'long media type')));
    record('file authorship json', await upload(form('', 'authorship text', `--${boundary}\r\nContent-Disposition: form-data; name="authorship"\r\n\r\n{not json\r\n`)));
    // A claim's canonical text, posted again as a file: the id is stored as a claim.
    expect((await post('/items', { kind: 'question', title: 't2', body: '' }, alice.auth)).status).toBe(201);
    record('file over a claim', await upload(form('Content-Type: text/plain\r\n', 'x.claim/1\nquestion\nt2\n')));
    record('items text/plain', await call(relay.baseUrl, 'POST', '/items', { rawBody: 'x', auth: alice.auth, headers: { 'content-type': 'text/plain' } }));
    record('slice exclude', await post('/slice/exclude', { node_id: bob.nodeId }, alice.auth));
    record('declare future', await post('/slice/declare', sliceDeclarationBy(alice, { t: 1, v: [bob.nodeId] }, clock.nowMs() + 301_000)));
    record('declare unregistered', await post('/slice/declare', sliceDeclarationBy(keyOf(8), { t: 1, v: [bob.nodeId] }, clock.nowMs())));
    expect((await post('/slice/declare', sliceDeclarationBy(alice, { t: 1, v: [bob.nodeId] }, clock.nowMs()))).status).toBe(200);
    record('declare superseded', await post('/slice/declare', sliceDeclarationBy(alice, { t: 1, v: [operator.nodeId] }, clock.nowMs() - 1000)));
  });

  it('lookups, bots and peers', async () => {
    for (let i = 0; i < 30; i++) expect((await get('/lookup?phone=%2B41791234567', bob.auth)).status).toBe(200);
    record('lookup limit', await get('/lookup?phone=%2B41791234567', bob.auth));
    for (let i = 0; i < 20; i++) expect((await post('/bots', { name: `bot ${i}` }, bob.auth)).status).toBe(201);
    record('bots limit', await post('/bots', { name: 'one more' }, bob.auth));
    record('reach not operator', await post('/reach', { url: 'http://peer.example' }, alice.auth));
    record('probe unknown peer', await post('/reach/probe', { url: 'http://peer.example' }, operator.auth));
    record('pull unknown peer', await post('/federation/pull', { url: 'http://peer.example' }, operator.auth));
  });

  it('invites and pairing', async () => {
    record('invite unknown', await post('/invites/accept', { code: 'NOSUCHCODE00' }, alice.auth));
    const own = String((await post('/invites', {}, alice.auth)).body.code);
    record('invite own', await post('/invites/accept', { code: own }, alice.auth));
    expect((await post('/invites/accept', { code: own }, bob.auth)).status).toBe(200);
    const another = String((await post('/invites', {}, operator.auth)).body.code);
    record('invite accepted before', await post('/invites/accept', { code: another }, bob.auth));
    for (let i = 0; i < 20; i++) expect((await post('/invites', {}, alice.auth)).status).toBe(201);
    record('invites limit', await post('/invites', {}, alice.auth));
    record('pair token form', await get('/pair/bad!token'));
    record('pair unknown', await get(`/pair/${'A'.repeat(32)}`));
    const token = String((await post('/pair/start', {}, alice.auth)).body.token);
    record('pair with self', await post('/pair/confirm', { token }, alice.auth));
    expect((await post('/pair/confirm', { token }, bob.auth)).status).toBe(200);
    record('pair used', await post('/pair/confirm', { token }, operator.auth));
    record('pair qr used', await get(`/pair/${token}/qr`));
    for (let i = 0; i < 20; i++) expect((await post('/pair/start', {}, bob.auth)).status).toBe(201);
    record('pairings limit', await post('/pair/start', {}, bob.auth));
  });

  it('answers each as before', () => {
    if (process.env.RECORD_RELAY_REFUSALS) console.log(JSON.stringify(answers, null, 2));
    expect(answers).toEqual(expectedRefusals);
  });
});
