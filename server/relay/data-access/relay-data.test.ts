import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayStore } from '../relay-store.js';

const dirs: string[] = [];
const stores: RelayStore[] = [];
const open = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'hilbench-relay-data-'));
  dirs.push(d);
  const store = new RelayStore(d);
  stores.push(store);
  return store;
};
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const HOUR_MS = 3600_000;
const node = (n: number) => n.toString(16).padStart(64, '0');

describe('relay repositories', () => {
  it('keeps code sends of the last hour and one open code per number and purpose', () => {
    const { phoneCodes } = open().data;
    phoneCodes.recordSend('+41791234567', 0);
    phoneCodes.recordSend('+41791234567', 60_000);
    expect(phoneCodes.recentSends('+41791234567', HOUR_MS)).toEqual([60_000]);
    const first = phoneCodes.replaceOpen({ phone: '+41791234567', purpose: 'login', nodeId: null, nowMs: 0, expiresMs: 600_000 }, (id) => `h${id}`);
    const second = phoneCodes.replaceOpen({ phone: '+41791234567', purpose: 'login', nodeId: node(1), nowMs: 1, expiresMs: 600_000 }, (id) => `h${id}`);
    expect(phoneCodes.latestOpen('+41791234567', 'login', 2)).toEqual({ id: second, node_id: node(1), code_hash: `h${second}`, attempts: 0 });
    phoneCodes.countAttempt(second);
    phoneCodes.markUsed(second);
    expect(phoneCodes.latestOpen('+41791234567', 'login', 2)).toBeUndefined();
    expect(first).not.toBe(second);
  });

  it('moves a phone number to the node that proves it', () => {
    const store = open();
    const { nodes, phones } = store.data;
    for (const n of [1, 2]) nodes.insert({ nodeId: node(n), local: true, name: '', registration: '{}', nowMs: n });
    phones.assign('+41791234567', node(1), 10);
    phones.assign('+41791234567', node(2), 20);
    expect(phones.nodeOf('+41791234567')).toBe(node(2));
    expect(phones.ofNode(node(1))).toBeUndefined();
    expect(phones.discoverableNodes('+41791234567')).toEqual([]);
    nodes.updateDirectory(node(2), { listed: null, phoneDiscoverable: true }, 30);
    expect(phones.discoverableNodes('+41791234567')).toEqual([node(2)]);
    expect(nodes.get(node(2))).toMatchObject({ listed: 0, phone_discoverable: 1, updated_ms: 30 });
  });

  it('burns a proof once and bumps credential versions', () => {
    const { nodes, bots } = open().data;
    expect(nodes.burnProof('sig', 1)).toBe(true);
    expect(nodes.burnProof('sig', 2)).toBe(false);
    nodes.insert({ nodeId: node(1), local: false, name: 'relay node', registration: '{}', nowMs: 1 });
    expect(nodes.localCredVersion(node(1))).toBeUndefined();
    nodes.markLocal(node(1), null, 2);
    expect(nodes.localCredVersion(node(1))).toBe(1);
    expect(nodes.get(node(1))?.name).toBe('relay node');
    bots.insert({ botId: 'bot_1', owner: node(1), name: 'b', tokenHash: 'th', nowMs: 3 });
    expect(bots.findActiveByTokenHash('th')).toEqual({ bot_id: 'bot_1', owner: node(1) });
    expect(nodes.bumpCredVersion(node(1), 4)).toBe(2);
    bots.revokeAllOf(node(1), 4);
    expect(bots.findActiveByTokenHash('th')).toBeUndefined();
    expect(bots.countActive(node(1))).toBe(0);
  });

  it('pages items newest first by cursor and events oldest first by seq and author', () => {
    const store = open();
    const { items, events } = store.data;
    for (const n of [1, 2, 3]) {
      items.insert({ item_id: node(n), type: 'claim', kind: 'note', title: `t${n}`, body: '', file_bytes: null, media_type: null, author: node(n % 2), bot_id: null, origin: null, created_ms: n, authorship: null });
      store.appendEvent('item', node(n % 2), node(n), { n }, n);
    }
    const page = items.page(Number.MAX_SAFE_INTEGER, undefined, 2);
    expect(page.map((r) => r.title)).toEqual(['t3', 't2']);
    expect(items.page(page.at(-1)!.cursor, undefined, 2).map((r) => r.title)).toEqual(['t1']);
    expect(items.page(Number.MAX_SAFE_INTEGER, node(1), 5).map((r) => r.title)).toEqual(['t3', 't1']);
    expect(events.after(0, [], 10).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(events.after(1, [node(1)], 10).map((e) => JSON.parse(e.payload))).toEqual([{ n: 3 }]);
  });

  it('pairs two nodes once, in id order, seen from both sides', () => {
    const { social } = open().data;
    social.insertPairing({ tokenHash: 'h', nodeId: node(2), nowMs: 1, expiresMs: 100 });
    social.confirmPairing(social.pairing('h')!, node(1), 5);
    expect(social.pairing('h')).toMatchObject({ confirmed_by: node(1), confirmed_ms: 5 });
    expect(social.pairs(10)).toEqual([[node(1), node(2)]]);
    expect(social.pairedWith(node(2))).toEqual([node(1)]);
    expect(social.pairedWith(node(1))).toEqual([node(2)]);
  });
});

describe('the relay data-access layer', () => {
  it('is the only place in server/relay that prepares SQL', () => {
    // Decision 0312: route handlers and domain classes call repositories. Tests may use the database.
    const relayDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
    const offenders = readdirSync(relayDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith(`data-access${path.sep}`))
      .filter((f) => /\.prepare\(|\.exec\(`|\bdb\.exec\(/.test(readFileSync(path.join(relayDir, f), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
