import { createClock } from '@sinonjs/fake-timers';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, registerNode, startRelayServer, tempDataDir, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

/**
 * Every endpoint of the interface is served, and each refuses the wrong kind of credential:
 * human-only endpoints refuse a Bot token (403) and no header (401), bot-only ones refuse a human
 * Bearer (403), endpoints for either refuse no header (401), public ones ignore any header. The
 * endpoint table is the project's own statement of the interface (docs/interface/relay-service.md).
 */
const specRows = readFileSync(new URL('../../docs/interface/relay-service.md', import.meta.url), 'utf8')
  .split('\n')
  .map((line) => /^\| (GET|POST) \| (\/\S*) \| ([^|]*)\| (yes|no) \| (yes|no) \| ([^|]+) \| ([^|]+) \|$/.exec(line))
  .filter((m): m is RegExpExecArray => m !== null)
  .map((m) => ({ method: m[1]!.toLowerCase(), path: m[2]!, in093: m[4] === 'yes', in0919: m[5] === 'yes', credential: m[6]! }));

/** The documented extensions (docs/interface/relay-service.md, "Endpoints hilbench adds") the relay serves as routes. */
const extensionRows = (() => {
  const doc = readFileSync(new URL('../../docs/interface/relay-service.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('### Endpoints hilbench adds'), doc.indexOf('## Resources'));
  return section
    .split('\n')
    .map((line) => /^\| (GET|POST) \| (\/\S*) \| (\S+) \| (\d{3}) \|$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[2] !== '/openapi.json')
    .map((m) => ({ method: m[1]!.toLowerCase(), path: m[2]!, credential: m[3]! }));
})();

const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
let relay: RunningRelay;
let human: TestNode;
let botAuth: string;

beforeAll(async () => {
  // carol operates the relay, so the operator-only endpoints (POST /reach, /reach/probe) accept her credential too.
  const carol = generateNodeKey();
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [carol.nodeId] });
  human = await registerNode(relay, clock, { name: 'carol', key: carol });
  const bot = await call(relay.baseUrl, 'POST', '/bots', { body: { name: 'helper' }, auth: human.auth });
  botAuth = String(bot.body.authorization);
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

const concrete = (path: string) => path.replace('{id}', '0'.repeat(64)).replace('{node}', '1'.repeat(64)).replace('{token}', 'T'.repeat(32));

describe('the route table against the spec', () => {
  it('the interface lists 44 endpoints (the brief says 43; the table has 44), all in 0.9.19', () => {
    expect(specRows).toHaveLength(44);
    expect(specRows.every((r) => r.in0919)).toBe(true);
  });

  it('serves exactly the interface endpoints, each with the version it first appeared in and its credential', () => {
    const ours = relay.service.routes.map((r) => `${r.method} ${r.path} ${r.since} ${r.auth}`).sort();
    const spec = specRows.map((r) => `${r.method} ${r.path.replace(/\?.*$/, '')} ${r.in093 ? '0.9.3' : '0.9.19'} ${r.credential}`);
    // Documented extensions are served too, as of the current version.
    const extensions = extensionRows.map((r) => `${r.method} ${r.path} 0.9.19 ${r.credential}`);
    expect(extensions).toEqual(['post /federation/pull 0.9.19 human', 'post /slice/declare 0.9.19 signature']);
    expect(ours).toEqual([...spec, ...extensions].sort());
  });
});

describe('each endpoint refuses the wrong kind of credential', () => {
  it.each([...specRows, ...extensionRows].map((r) => [r.method, r.path.replace(/\?.*$/, '')] as const))('%s %s', async (method, path) => {
    const r = relay.service.routes.find((x) => x.method === method && x.path === path)!;
    const url = concrete(path);
    const send = (auth?: string) => call(relay.baseUrl, method.toUpperCase(), url, { ...(auth ? { auth } : {}), ...(method === 'post' ? { body: {} } : {}) });
    switch (r.auth) {
      case 'human': {
        expect((await send()).status).toBe(401);
        const asBot = await send(botAuth);
        expect(asBot.status).toBe(403);
        expect(String(asBot.body.detail)).toMatch(/humans/);
        expect((await send('Bearer ' + '0'.repeat(64) + '.' + 'f'.repeat(64))).status).toBe(401);
        expect([401, 403]).not.toContain((await send(human.auth)).status);
        break;
      }
      case 'bot': {
        expect((await send()).status).toBe(401);
        const asHuman = await send(human.auth);
        expect(asHuman.status).toBe(403);
        expect(String(asHuman.body.detail)).toMatch(/bots/);
        expect((await send('Bot not-a-token')).status).toBe(401);
        expect([401, 403]).not.toContain((await send(botAuth)).status);
        break;
      }
      case 'human-or-bot': {
        expect((await send()).status).toBe(401);
        expect((await send('Bot not-a-token')).status).toBe(401);
        expect([401, 403]).not.toContain((await send(human.auth)).status);
        expect([401, 403]).not.toContain((await send(botAuth)).status);
        break;
      }
      default: {
        // Public and signature-authenticated endpoints ignore the header, even a broken one.
        const a = await send();
        const b = await send('Bearer garbage');
        expect([401, 403]).not.toContain(a.status);
        expect(b.status).toBe(a.status);
      }
    }
  });
});

describe('credential format', () => {
  it('refuses an unknown scheme and a malformed bearer with 401 and WWW-Authenticate', async () => {
    for (const auth of ['Basic dXNlcjpwYXNz', 'Bearer abc', `Bearer ${human.nodeId}`, `Bearer ${human.nodeId}.zz`]) {
      const r = await call(relay.baseUrl, 'GET', '/me', { auth });
      expect(r.status, auth).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/Bearer/);
    }
  });

  it('a human credential is <node_id>.<hmac> and a changed hmac is refused', async () => {
    const [nodeId, mac] = human.auth.slice('Bearer '.length).split('.') as [string, string];
    expect(nodeId).toBe(human.nodeId);
    expect(mac).toMatch(/^[0-9a-f]{64}$/);
    const flipped = mac.slice(0, -1) + (mac.endsWith('0') ? '1' : '0');
    expect((await call(relay.baseUrl, 'GET', '/me', { auth: `Bearer ${nodeId}.${flipped}` })).status).toBe(401);
    expect((await call(relay.baseUrl, 'GET', '/me', { auth: human.auth })).status).toBe(200);
  });

  it('the relay node itself has no human credential', async () => {
    const r = await call(relay.baseUrl, 'GET', '/me', { auth: `Bearer ${relay.service.nodeId}.${'0'.repeat(64)}` });
    expect(r.status).toBe(401);
  });
});

describe('credentials come before the body', () => {
  it('an unauthenticated call with a broken body is a 401, not a 422', async () => {
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: '{"kind":', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(401);
    const asBot = await call(relay.baseUrl, 'POST', '/slice', { rawBody: '{', headers: { 'content-type': 'application/json' }, auth: botAuth });
    expect(asBot.status).toBe(403);
  });
});
