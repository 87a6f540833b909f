import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { relayTableRows } from '../support/relay-tables.js';

/**
 * Issue 18, "a read never writes": GET /items/{id}/bulletin/{node} used to store the bulletin it
 * reported as a floor, and GET /lookup logged each lookup in the database. Every relay table, row
 * by row, must be the same before and after a burst of every GET the relay's /openapi.json lists.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir('relay-reads-');
let relay: RunningRelay;
let nodes: TestNode[];
let item: string;
let fileItem: string;
let botToken: string;
let pairToken: string;

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
  nodes = [];
  for (let k = 0; k < 4; k++) nodes.push(await registerNode(relay, clock, { name: `node ${k}` }));
  const [h1, h2, x] = nodes as [TestNode, TestNode, TestNode];
  item = await postClaim(relay, h1.auth, { kind: 'statement', title: 'reads never write', body: '' });
  // h1 voted and accepted yes; x never votes, and its published slice {h1} is v-blocked by h1's
  // accept: its bulletin is `accepted`, the rank the old read path stored as a floor.
  for (const phase of ['vote', 'accept'] as const) {
    expect((await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(h1, item, 'yes', phase, { t: 1, v: [h2.nodeId], i: [] }, clock) })).status).toBe(201);
  }
  expect((await call(relay.baseUrl, 'POST', '/slice', { body: { t: 1, v: [h1.nodeId] }, auth: x.auth })).status).toBe(200);
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array([1, 2, 3])], { type: 'application/octet-stream' }), 'three.bin');
  const file = await fetch(`${relay.baseUrl}/items`, { method: 'POST', headers: { authorization: h1.auth }, body: form });
  fileItem = String(((await file.json()) as { id: string }).id);
  botToken = String((await call(relay.baseUrl, 'POST', '/bots', { body: { name: 'reader' }, auth: h1.auth })).body.token);
  pairToken = String((await call(relay.baseUrl, 'POST', '/pair/start', { body: {}, auth: h1.auth })).body.token);
  expect((await call(relay.baseUrl, 'POST', '/invites', { body: {}, auth: h1.auth })).status).toBe(201);
  expect((await call(relay.baseUrl, 'POST', `/items/${item}/report`, { body: { reason: 'spam', note: '' }, auth: h2.auth })).status).toBe(201);
});

afterAll(async () => {
  await relay.close();
  data.remove();
});

/** Every GET path of /openapi.json, with its path parameters filled in every way this relay can answer. */
async function everyGet(): Promise<{ path: string; auth?: string; headers?: Record<string, string> }[]> {
  const openapi = (await call<{ paths: Record<string, Record<string, { 'x-credential'?: string }>> }>(relay.baseUrl, 'GET', '/openapi.json')).body;
  const human = (nodes[0] as TestNode).auth;
  const out: { path: string; auth?: string; headers?: Record<string, string> }[] = [];
  for (const [template, methods] of Object.entries(openapi.paths)) {
    const get = methods.get;
    if (!get) continue;
    const credential = get['x-credential'] ?? 'none';
    const auth = credential === 'bot' ? `Bot ${botToken}` : credential === 'none' || credential === 'signature' ? undefined : human;
    const nodeIds = [...nodes.map((n) => n.nodeId), relay.service.nodeId];
    const fills: Record<string, string[]> = { id: template.startsWith('/nodes/') ? nodeIds : [item, fileItem], node: nodeIds, token: [pairToken] };
    let paths = [template];
    for (const [name, values] of Object.entries(fills)) {
      paths = paths.flatMap((p) => (p.includes(`{${name}}`) ? values.map((v) => p.replace(`{${name}}`, v)) : [p]));
    }
    for (const path of paths) {
      const query = path === '/lookup' ? '?phone=%2B41795550000' : path === '/search' ? '?q=node' : '';
      out.push({ path: path + query, ...(auth ? { auth } : {}) });
      if (path === `/items/${fileItem}`) out.push({ path, headers: { accept: 'application/octet-stream' } });
    }
  }
  return out;
}

describe('a read never writes', () => {
  it('every relay table is the same, row by row, before and after a burst of every GET', async () => {
    const gets = await everyGet();
    expect(gets.some((g) => g.path.includes('/bulletin/'))).toBe(true);
    const before = await relayTableRows(data.dir);
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['bulletin_floors', 'votes', 'slices', 'events']));
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(gets.map((g) => call(relay.baseUrl, 'GET', g.path, { ...(g.auth ? { auth: g.auth } : {}), ...(g.headers ? { headers: g.headers } : {}) })));
      answers.forEach((answer, k) => expect(answer.status, gets[k]!.path).toBeLessThan(300));
    }
    // The bulletin that used to be stored as a floor is what was read.
    expect((await call(relay.baseUrl, 'GET', `/items/${item}/bulletin/${nodes[2]!.nodeId}`)).body).toMatchObject({ state: 'accepted', value: 'yes' });
    expect(await relayTableRows(data.dir)).toEqual(before);
  });
});
