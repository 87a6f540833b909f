import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { claimId } from '../../core/relay/claim.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, claimAuthorship, fileAuthorship, registerNode, startRelayServer, tempDataDir, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * A client of relay A signs statements that do not describe the item A stores under their id: a
 * file's statement with another title than the stored one, a file's statement for an id A holds as
 * a claim. An honest relay only serves statements that verify against what it serves with them, so
 * A refuses them (nothing changes) and its peer B, which counts every false document against A's
 * standing, finds none. Before the fix A attached them to the stored items and B counted offences.
 */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const operatorKey = generateNodeKey();
const dirs = [tempDataDir('relay-hostile-a-'), tempDataDir('relay-hostile-b-')];
let upstream: RunningRelay;
let downstream: RunningRelay;
let alice: TestNode;
let operator: TestNode;

beforeAll(async () => {
  upstream = await startRelayServer({ clock, dataDir: dirs[0]!.dir, logger: memoryLogger() });
  downstream = await startRelayServer({ clock, dataDir: dirs[1]!.dir, logger: memoryLogger(), peers: [upstream.baseUrl], operators: [operatorKey.nodeId], allowPrivatePeers: true });
  alice = await registerNode(upstream, clock);
  operator = await registerNode(downstream, clock, { key: operatorKey });
});
afterAll(async () => {
  await Promise.all([upstream, downstream].map((r) => r.close()));
  for (const d of dirs) d.remove();
});

const detail = (body: unknown) => (body as { detail: { loc: unknown[]; msg: string }[] }).detail[0]!;
const files = () => readdirSync(join(dirs[0]!.dir, 'files')).sort();

function upload(node: TestNode, bytes: Uint8Array, title: string, authorship?: unknown) {
  const form = new FormData();
  form.append('title', title);
  if (authorship !== undefined) form.append('authorship', JSON.stringify(authorship));
  form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'f.bin');
  return call(upstream.baseUrl, 'POST', '/items', { rawBody: form, auth: node.auth });
}

describe('an authorship statement given for an item the relay already holds', () => {
  it('must describe the stored file (its title), else 422 and the item stays unsigned', async () => {
    const bytes = new TextEncoder().encode('firmware posted twice');
    const id = createHash('sha256').update(bytes).digest('hex');
    expect((await upload(alice, bytes, 'first.bin')).status).toBe(201);
    const renamed = await upload(alice, bytes, 'second.bin', fileAuthorship(alice, { id, title: 'second.bin' }));
    expect([renamed.status, detail(renamed.body).loc]).toEqual([422, ['body', 'authorship', 'title']]);
    expect(detail(renamed.body).msg).toContain('"first.bin"');
    expect((await call(upstream.baseUrl, 'GET', `/items/${id}`)).body).toMatchObject({ title: 'first.bin', authorship: null });
    // The statement of the file as stored is taken, whatever title the second upload carries.
    const signed = await upload(alice, bytes, 'second.bin', fileAuthorship(alice, { id, title: 'first.bin' }));
    expect(signed.status).toBe(200);
    expect(signed.body).toMatchObject({ title: 'first.bin', authorship: fileAuthorship(alice, { id, title: 'first.bin' }) });
  });

  it('is refused with 409 for a file whose id the relay holds as a claim, leaving no file behind', async () => {
    const claim = { kind: 'statement', title: 'a claim', body: 'whose text is also a file' };
    expect((await call(upstream.baseUrl, 'POST', '/items', { body: claim, auth: alice.auth })).status).toBe(201);
    const bytes = new TextEncoder().encode(`x.claim/1\n${claim.kind}\n${claim.title}\n${claim.body}`);
    const id = claimId(claim);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(id);
    const before = files();
    const asFile = await upload(alice, bytes, 'claim.txt', fileAuthorship(alice, { id, title: 'claim.txt' }));
    expect(asFile.status).toBe(409);
    expect(asFile.body).toEqual({ detail: expect.stringContaining('claim') });
    const unsigned = await upload(alice, bytes, 'claim.txt');
    expect(unsigned.status).toBe(409);
    expect(files()).toEqual(before);
    expect((await call(upstream.baseUrl, 'GET', `/items/${id}`)).body).toMatchObject({ type: 'claim', authorship: null });
    // The claim's own statement still signs it.
    const signed = await call(upstream.baseUrl, 'POST', '/items', { body: { ...claim, authorship: claimAuthorship(alice, claim) }, auth: alice.auth });
    expect([signed.status, signed.body.authorship]).toEqual([200, claimAuthorship(alice, claim)]);
  });

  it('leaves the relay with no offence at a peer that pulls everything it holds', async () => {
    const pulled = await call<{ results: { reachable: boolean }[] }>(downstream.baseUrl, 'POST', '/federation/pull', { body: {}, auth: operator.auth });
    expect(pulled.status).toBe(200);
    expect(pulled.body.results).toEqual([expect.objectContaining({ reachable: true })]);
    const peers = (await call<{ peers: { url: string; offences: number; last_offence: unknown }[] }>(downstream.baseUrl, 'GET', '/reach')).body.peers;
    expect(peers.find((p) => p.url === upstream.baseUrl)).toMatchObject({ offences: 0, last_offence: null });
  });
});
