import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { verifyVote, type Vote } from '../../core/relay/vote.js';
import { verifySignedDocument } from '../../server/relay/domain/signed-document.js';
import { pairingQrPng } from '../../server/relay/routes/social-routes.js';
import { call, postClaim, registerNode, relayForTests, relayLimits } from '../support/relay-test-kit.js';

const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const { relay, ann, ben } = relayForTests({ clock, nodes: ['ann', 'ben'], relay: { basePath: '/api', humanPath: '', seeds: ['https://seed.example'] } });

const post = (path: string, body: unknown, auth: string) => call(relay.baseUrl, 'POST', path, { body, auth });

describe('invites', () => {
  it('are single use, expire, and record who invited whom', async () => {
    const created = await call(relay.baseUrl, 'POST', '/invites', { auth: ann.auth });
    expect(created.status).toBe(201);
    const code = String(created.body.code);
    expect(code).toMatch(/^[0-9A-Z]{12}$/);
    expect((await post('/invites/accept', { code }, ann.auth)).status).toBe(409);
    const accepted = await post('/invites/accept', { code: code.toLowerCase() }, ben.auth);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ node_id: ben.nodeId, invited_by: ann.nodeId });
    const carl = await registerNode(relay, clock);
    expect((await post('/invites/accept', { code }, carl.auth)).status).toBe(404);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${ben.nodeId}`)).body.invited_by).toBe(ann.nodeId);
    const late = await call(relay.baseUrl, 'POST', '/invites', { auth: ann.auth });
    fake.tick(relayLimits.inviteTtlSeconds * 1000 + 1);
    const expired = await post('/invites/accept', { code: String(late.body.code) }, carl.auth);
    expect(expired.status).toBe(404);
    expect(expired.text).toBe((await post('/invites/accept', { code: 'NOPE' }, carl.auth)).text);
    const list = await call<{ invites: { code: string; state: string }[] }>(relay.baseUrl, 'GET', '/invites', { auth: ann.auth });
    expect(list.body.invites.map((i) => i.state).sort()).toEqual(['accepted', 'expired']);
  });

  it('are deleted once expired or accepted an invite\'s lifetime ago, when their inviter creates another', async () => {
    const dana = await registerNode(relay, clock, { name: 'dana' });
    const eve = await registerNode(relay, clock, { name: 'eve' });
    const create = async () => {
      fake.tick(1); // GET /invites lists newest first
      return String((await call(relay.baseUrl, 'POST', '/invites', { auth: dana.auth })).body.code);
    };
    const codesListed = async () => (await call<{ invites: { code: string; state: string }[] }>(relay.baseUrl, 'GET', '/invites', { auth: dana.auth })).body.invites.map((i) => [i.code, i.state]);
    const expiring = await create();
    const accepted = await create();
    const ttlMs = relayLimits.inviteTtlSeconds * 1000;
    fake.tick(ttlMs / 2);
    expect((await post('/invites/accept', { code: accepted }, eve.auth)).status).toBe(200);
    fake.tick(ttlMs / 2);
    // Expired just now, accepted half a lifetime ago: creating another keeps both, listed as before.
    const later = await create();
    expect(await codesListed()).toEqual([[later, 'open'], [accepted, 'accepted'], [expiring, 'expired']]);
    fake.tick(ttlMs);
    // Both a lifetime past: creating another deletes them; \`later\`, expired just now, stays.
    const last = await create();
    expect(await codesListed()).toEqual([[last, 'open'], [later, 'expired']]);
    // A pruned code answers the same 404 as any used or unknown one; who invited eve stays.
    const again = await post('/invites/accept', { code: accepted }, ann.auth);
    expect([again.status, again.text]).toEqual([404, (await post('/invites/accept', { code: 'NOPE' }, ann.auth)).text]);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${eve.nodeId}`)).body.invited_by).toBe(dana.nodeId);
  });

  it('limits open invites per node', async () => {
    const node = await registerNode(relay, clock);
    for (let i = 0; i < relayLimits.openInvitesMax; i++) expect((await call(relay.baseUrl, 'POST', '/invites', { auth: node.auth })).status).toBe(201);
    expect((await call(relay.baseUrl, 'POST', '/invites', { auth: node.auth })).status).toBe(409);
  });
});

describe('pairing', () => {
  it('a token shown as a QR PNG pairs two nodes once, and expires', async () => {
    const start = await call(relay.baseUrl, 'POST', '/pair/start', { auth: ann.auth });
    expect(start.status).toBe(201);
    const token = String(start.body.token);
    const qr = await fetch(`${relay.baseUrl}/pair/${token}/qr`);
    expect(qr.status).toBe(200);
    expect(qr.headers.get('content-type')).toBe('image/png');
    const png = new Uint8Array(await qr.arrayBuffer());
    expect([...png.slice(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    // It encodes the pairing URL: the same URL renders to the same image, another URL does not.
    expect(Buffer.from(png).equals(await pairingQrPng(String(start.body.url)))).toBe(true);
    expect(Buffer.from(png).equals(await pairingQrPng(`${relay.baseUrl}/pair/other`))).toBe(false);
    expect(start.body.url).toBe(`${relay.baseUrl}/pair/${token}`);
    expect((await call(relay.baseUrl, 'GET', `/pair/${token}`)).body).toMatchObject({ state: 'pending', node_id: ann.nodeId, name: 'ann' });
    expect((await post('/pair/confirm', { token }, ann.auth)).status).toBe(409);
    const confirm = await post('/pair/confirm', { token }, ben.auth);
    expect(confirm.status).toBe(200);
    expect((await call(relay.baseUrl, 'GET', `/pair/${token}`)).body).toMatchObject({ state: 'paired', paired_with: ben.nodeId });
    expect((await post('/pair/confirm', { token }, ben.auth)).status).toBe(410);
    expect((await fetch(`${relay.baseUrl}/pair/${token}/qr`)).status).toBe(410);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${ann.nodeId}`)).body.paired_with).toEqual([ben.nodeId]);

    const old = String((await call(relay.baseUrl, 'POST', '/pair/start', { auth: ann.auth })).body.token);
    fake.tick(relayLimits.pairTokenTtlSeconds * 1000);
    expect((await call(relay.baseUrl, 'GET', `/pair/${old}`)).body.state).toBe('expired');
    expect((await post('/pair/confirm', { token: old }, ben.auth)).status).toBe(410);
    expect((await call(relay.baseUrl, 'GET', `/pair/${'x'.repeat(32)}`)).status).toBe(404);
  });

  it('limits pending pairing tokens per node; a confirmed or expired one frees its place, and is deleted at the next start', async () => {
    const node = await registerNode(relay, clock);
    const start = () => call(relay.baseUrl, 'POST', '/pair/start', { auth: node.auth });
    const tokens: string[] = [];
    for (let i = 0; i < relayLimits.pendingPairingsMax; i++) {
      const started = await start();
      expect(started.status).toBe(201);
      tokens.push(String(started.body.token));
    }
    const refused = await start();
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain(`at most ${relayLimits.pendingPairingsMax} pending pairing tokens`);
    expect((await post('/pair/confirm', { token: tokens[0] }, ben.auth)).status).toBe(200);
    expect((await start()).status).toBe(201);
    expect((await start()).status).toBe(409);
    fake.tick(relayLimits.pairTokenTtlSeconds * 1000);
    const stateOf = async (token: string) => {
      const answer = await call(relay.baseUrl, 'GET', `/pair/${token}`);
      return answer.status === 200 ? answer.body.state : answer.status;
    };
    expect([await stateOf(tokens[0] as string), await stateOf(tokens[1] as string)]).toEqual(['paired', 'expired']);
    expect((await start()).status).toBe(201);
    // Starting another pruned the node's expired tokens and the one confirmed a lifetime ago: the rows do not pile up.
    expect([await stateOf(tokens[0] as string), await stateOf(tokens[1] as string)]).toEqual([404, 404]);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${node.nodeId}`)).body.paired_with).toEqual([ben.nodeId]);
  });
});

describe('directory, search and nodes', () => {
  it('search finds listed nodes only, and items by title', async () => {
    await post('/me', { name: 'zelda the tester', about: 'likes logic analysers' }, ann.auth);
    const hidden = await call(relay.baseUrl, 'GET', '/search?q=zelda');
    expect(hidden.body.nodes).toEqual([]);
    const dir = await post('/directory', { listed: true }, ann.auth);
    expect(dir.body).toEqual({ node_id: ann.nodeId, listed: true, phone_discoverable: false });
    const found = await call(relay.baseUrl, 'GET', '/search?q=ZELDA');
    expect((found.body.nodes as { node_id: string }[]).map((n) => n.node_id)).toEqual([ann.nodeId]);
    const id = await postClaim(relay, ben.auth, { kind: 'observation', title: 'LED 100% duty on boot', body: '' });
    const items = await call(relay.baseUrl, 'GET', '/search?q=100%25');
    expect((items.body.items as { id: string }[]).map((i) => i.id)).toEqual([id]);
    expect((await call(relay.baseUrl, 'GET', '/search?q=')).status).toBe(422);
    expect((await call(relay.baseUrl, 'GET', '/search')).status).toBe(422);
  });

  it('lists nodes, including this relay\'s own node, and shows one', async () => {
    const list = await call<{ nodes: { node_id: string; relay_node: boolean }[]; total: number }>(relay.baseUrl, 'GET', '/nodes');
    expect(list.body.nodes.find((n) => n.relay_node)?.node_id).toBe(relay.service.nodeId);
    expect(list.body.total).toBe(list.body.nodes.length);
    expect((await call(relay.baseUrl, 'GET', '/nodes/zz')).status).toBe(422);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${'e'.repeat(64)}`)).status).toBe(404);
  });
});

describe('discovery documents', () => {
  it('/health reports version, protocol, scheme and limits', async () => {
    const h = await call(relay.baseUrl, 'GET', '/health');
    expect(h.body).toMatchObject({
      status: 'ok',
      version: '0.9.19',
      protocol: 'x-relay',
      scheme: 'scp-s5',
      node_id: relay.service.nodeId,
      limits: { title_max_chars: 200, body_max_chars: 32000, file_max_bytes: 16777216 },
      credentials: { human: 'Authorization: Bearer <node_id>.<hmac>', bot: 'Authorization: Bot <token>' },
      pages: { human: `${relay.humanUrl}/`, agents: `${relay.humanUrl}/agents`, agents_md: `${relay.humanUrl}/AGENTS.md`, llms_txt: `${relay.humanUrl}/llms.txt` },
    });
  });

  it('/examples are real: the registration and the vote verify', async () => {
    const ex = await call<{ registration: { request: { body: Record<string, unknown> } }; vote: { request: { body: Vote } } }>(relay.baseUrl, 'GET', '/examples');
    const reg = ex.body.registration.request.body;
    expect(verifySignedDocument(reg, String(reg.node_id))).toBe(true);
    expect(verifyVote(ex.body.vote.request.body)).toBe(true);
  });

  it('/seeds, /network and /relays', async () => {
    expect((await call(relay.baseUrl, 'GET', '/seeds')).body.seeds).toEqual([{ url: 'https://seed.example' }]);
    const net = await call(relay.baseUrl, 'GET', '/network');
    expect(net.body.relay).toMatchObject({ node_id: relay.service.nodeId });
    expect((net.body.counts as { nodes: number }).nodes).toBeGreaterThanOrEqual(3);
    expect((net.body.pairs as string[][]).length).toBeGreaterThanOrEqual(1);
    expect((await call(relay.baseUrl, 'GET', '/relays')).body).toEqual({ self: { url: relay.baseUrl, node_id: relay.service.nodeId }, relays: [] });
  });

  it('/openapi.json is generated from the validators and lists every route with its credential', async () => {
    const doc = await call<{
      openapi: string;
      info: { version: string };
      components: { schemas: Record<string, { properties: Record<string, { maxLength?: number }> }> };
      paths: Record<string, Record<string, { 'x-credential': string; parameters: { name: string }[]; requestBody?: { content: Record<string, { schema: { $ref?: string } }> } }>>;
    }>(
      relay.baseUrl,
      'GET',
      '/openapi.json',
    );
    expect(doc.body.openapi).toBe('3.1.0');
    expect(doc.body.info.version).toBe('0.9.19');
    const ops = Object.entries(doc.body.paths).flatMap(([p, m]) => Object.keys(m).map((k) => `${k} ${p}`));
    expect(ops.sort()).toEqual(relay.service.routes.map((r) => `${r.method} ${r.path}`).sort());
    const post = doc.body.paths['/items']!.post!;
    expect(post['x-credential']).toBe('human-or-bot');
    expect(post.requestBody!.content['application/json']!.schema.$ref).toBe('#/components/schemas/ClaimCreate');
    expect(doc.body.components.schemas.ClaimCreate!.properties.title!.maxLength).toBe(200);
    expect(doc.body.components.schemas.ClaimCreate!.properties.body!.maxLength).toBe(32000);
    expect(doc.body.paths['/events']!.get!.parameters.map((p) => p.name)).toEqual(['since', 'authors', 'limit']);
    // Every $ref points at a component that exists.
    const refs = [...JSON.stringify(doc.body).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of new Set(refs)) expect(doc.body.components.schemas[ref], ref).toBeDefined();
    expect(post.requestBody!.content['multipart/form-data']).toBeDefined();
  });

  it('the human site, agent page, AGENTS.md and llms.txt come from the same facts', async () => {
    const home = await fetch(`${relay.humanUrl}/`);
    expect(home.headers.get('content-type')).toMatch(/text\/html/);
    const html = await home.text();
    expect(html).toContain('x-relay');
    expect(html).toContain('16777216');
    const agents = await (await fetch(`${relay.humanUrl}/agents`)).text();
    for (const r of relay.service.routes) expect(agents).toContain(r.path.replace(/\{/g, '{'));
    const md = await fetch(`${relay.humanUrl}/AGENTS.md`);
    expect(md.headers.get('content-type')).toMatch(/markdown/);
    const mdText = await md.text();
    expect(mdText).toContain('Authorization: Bot <token>');
    expect(mdText).toContain('| POST | /items/{id}/vote | signature |');
    const llms = await (await fetch(`${relay.humanUrl}/llms.txt`)).text();
    expect(llms.startsWith('# x-relay 0.9.19')).toBe(true);
    expect(llms).toContain(`${relay.baseUrl}/openapi.json`);
    // The API lives under /api here, so /health at the root is not a page and not the API.
    expect((await fetch(`${relay.humanUrl}/health`)).status).toBe(404);
    expect((await call(relay.baseUrl, 'GET', '/no-such-endpoint')).body).toEqual({ detail: 'Not Found' });
    const wrongMethod = await call(relay.baseUrl, 'DELETE', '/items');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD, POST');
  });
});
