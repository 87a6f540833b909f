import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RelayStore } from '../../server/relay/relay-store.js';

/** Opens a fresh, empty relay store; `dispose` closes it and removes what it left (a data dir, a database). */
export type OpenRelayStore = () => Promise<{ store: RelayStore; dispose: () => Promise<void> }>;

const HOUR_MS = 3600_000;
const node = (n: number) => n.toString(16).padStart(64, '0');

/** Opens a fresh store before each test of the enclosing `describe` and disposes of it after; returns its getter. */
export function freshStorePerTest(open: OpenRelayStore): () => RelayStore {
  let current: { store: RelayStore; dispose: () => Promise<void> } | undefined;
  beforeEach(async () => {
    current = await open();
  });
  afterEach(async () => {
    await current?.dispose();
    current = undefined;
  });
  return () => {
    if (!current) throw new Error('no store open: beforeEach did not run');
    return current.store;
  };
}

/**
 * The relay's storage contract (issue 10, decision 0440): the same repositories, transactions,
 * event order, secrets and cache invalidation on the embedded SQLite store and on PostgreSQL.
 */
export function describeRelayStoreContract(name: string, open: OpenRelayStore): void {
  describe(`relay store contract: ${name}`, () => {
    const store = freshStorePerTest(open);

    describe('repositories', () => {
    it('keeps code sends of the last hour and one open code per number and purpose', async () => {
      const { phoneCodes } = store().plainData;
      await phoneCodes.recordSend('+41791234567', 0);
      await phoneCodes.recordSend('+41791234567', 60_000);
      expect(await phoneCodes.recentSends('+41791234567', HOUR_MS)).toEqual([60_000]);
      const first = await phoneCodes.replaceOpen({ phone: '+41791234567', purpose: 'login', nodeId: null, nowMs: 0, expiresMs: 600_000 }, (id) => `h${id}`);
      const second = await phoneCodes.replaceOpen({ phone: '+41791234567', purpose: 'login', nodeId: node(1), nowMs: 1, expiresMs: 600_000 }, (id) => `h${id}`);
      expect(await phoneCodes.latestOpen('+41791234567', 'login', 2)).toEqual({ id: second, node_id: node(1), code_hash: `h${second}`, attempts: 0 });
      await phoneCodes.countAttempt(second);
      await phoneCodes.markUsed(second);
      expect(await phoneCodes.latestOpen('+41791234567', 'login', 2)).toBeUndefined();
      expect(first).not.toBe(second);
    });

    it('moves a phone number to the node that proves it', async () => {
      const s = store();
      const { nodes, phones } = s.plainData;
      for (const n of [1, 2]) await nodes.insert({ nodeId: node(n), local: true, name: '', registration: '{}', nowMs: n });
      await phones.assign('+41791234567', node(1), 10);
      await phones.assign('+41791234567', node(2), 20);
      expect(await phones.nodeOf('+41791234567')).toBe(node(2));
      expect(await phones.ofNode(node(1))).toBeUndefined();
      expect(await phones.discoverableNodes('+41791234567')).toEqual([]);
      await nodes.updateDirectory(node(2), { listed: null, phoneDiscoverable: true }, 30);
      expect(await phones.discoverableNodes('+41791234567')).toEqual([node(2)]);
      expect(await nodes.get(node(2))).toMatchObject({ listed: 0, phone_discoverable: 1, updated_ms: 30 });
    });

    it('burns a proof once and bumps credential versions', async () => {
      const { nodes, bots } = store().plainData;
      expect(await nodes.burnProof('sig', 1)).toBe(true);
      expect(await nodes.burnProof('sig', 2)).toBe(false);
      await nodes.insert({ nodeId: node(1), local: false, name: 'relay node', registration: '{}', nowMs: 1 });
      expect(await nodes.localCredVersion(node(1))).toBeUndefined();
      await nodes.markLocal(node(1), null, 2);
      expect(await nodes.localCredVersion(node(1))).toBe(1);
      expect((await nodes.get(node(1)))?.name).toBe('relay node');
      await bots.insert({ botId: 'bot_1', owner: node(1), name: 'b', tokenHash: 'th', nowMs: 3 });
      expect(await bots.findActiveByTokenHash('th')).toEqual({ bot_id: 'bot_1', owner: node(1) });
      expect(await nodes.bumpCredVersion(node(1), 4)).toBe(2);
      await bots.revokeAllOf(node(1), 4);
      expect(await bots.findActiveByTokenHash('th')).toBeUndefined();
      expect(await bots.countActive(node(1))).toBe(0);
    });

    it('pages items newest first by cursor and events oldest first by seq and author', async () => {
      const s = store();
      const { items, events } = s.plainData;
      for (const n of [1, 2, 3]) {
        await items.insert({ item_id: node(n), type: 'claim', kind: 'note', title: `t${n}`, body: '', file_bytes: null, media_type: null, author: node(n % 2), bot_id: null, origin: null, created_ms: n, authorship: null });
        await s.tx(s.appendEvent('item', node(n % 2), node(n), { n }, n));
      }
      const page = await items.page(Number.MAX_SAFE_INTEGER, undefined, 2);
      expect(page.map((r) => r.title)).toEqual(['t3', 't2']);
      expect((await items.page(page.at(-1)!.cursor, undefined, 2)).map((r) => r.title)).toEqual(['t1']);
      expect((await items.page(Number.MAX_SAFE_INTEGER, node(1), 5)).map((r) => r.title)).toEqual(['t3', 't1']);
      expect((await events.after(0, [], 10)).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect((await events.after(1, [node(1)], 10)).map((e) => JSON.parse(e.payload))).toEqual([{ n: 3 }]);
    });

    it('pairs two nodes once, in id order, seen from both sides', async () => {
      const { social } = store().plainData;
      await social.insertPairing({ tokenHash: 'h', nodeId: node(2), nowMs: 1, expiresMs: 100 });
      await social.confirmPairing((await social.pairing('h'))!, node(1), 5);
      expect(await social.pairing('h')).toMatchObject({ confirmed_by: node(1), confirmed_ms: 5 });
      expect(await social.pairs(10)).toEqual([[node(1), node(2)]]);
      expect(await social.pairedWith(node(2))).toEqual([node(1)]);
      expect(await social.pairedWith(node(1))).toEqual([node(2)]);
    });
  });

    describe('transactions', () => {
      const item = (n: number) => ({ item_id: node(n), type: 'claim' as const, kind: 'note', title: `Title ${n}`, body: '', file_bytes: null, media_type: null, author: node(100), bot_id: null, origin: null, created_ms: n, authorship: null });

      it('commits a change and its event together, or neither', async () => {
        const s = store();
        await s.tx(function* () {
          yield* s.data.items.insert(item(1));
          yield* s.appendEvent('item', node(100), node(1), { n: 1 }, 1);
        });
        await expect(
          s.tx(function* () {
            yield* s.data.items.insert(item(2));
            yield* s.appendEvent('item', node(100), node(2), { n: 2 }, 2);
            throw new Error('refused after writing');
          }),
        ).rejects.toThrow('refused after writing');
        expect(await s.plainData.items.count()).toBe(1);
        expect((await s.plainData.events.after(0, [], 10)).map((e) => e.subject)).toEqual([node(1)]);
      });

      it('rolls back a savepoint alone, keeping the transaction around it', async () => {
        const s = store();
        const outcomes: string[] = [];
        await s.tx(function* () {
          for (const n of [1, 2, 3]) {
            try {
              yield* s.savepoint(function* () {
                yield* s.data.items.insert(item(n));
                if (n === 2) throw new Error('this one fails');
              });
              outcomes.push(`ok ${n}`);
            } catch (err) {
              outcomes.push((err as Error).message);
            }
          }
        });
        expect(outcomes).toEqual(['ok 1', 'this one fails', 'ok 3']);
        expect(await s.plainData.items.exists(node(1)) && await s.plainData.items.exists(node(3))).toBe(true);
        expect(await s.plainData.items.exists(node(2))).toBe(false);
      });

      it('tells its cache listeners when a transaction rolls back', async () => {
        const s = store();
        let told = 0;
        s.onCachesInvalid(() => told++);
        const before = told;
        await expect(s.tx(function* () { throw new Error('no'); })).rejects.toThrow('no');
        expect(told).toBeGreaterThan(before);
      });

      it('refuses a second item with the same id and keeps the first', async () => {
        const s = store();
        await s.tx(s.data.items.insert(item(1)));
        await expect(s.tx(s.data.items.insert({ ...item(1), title: 'other' }))).rejects.toThrow();
        expect((await s.plainData.items.get(node(1)))?.title).toBe('Title 1');
      });

      it('refuses to append an event outside a transaction (it would commit without the write lock)', async () => {
        const s = store();
        await expect(s.plain(s.appendEvent('node', node(1), node(1), {}, 1))).rejects.toThrow('outside a transaction');
        expect(await s.plainData.events.count()).toBe(0);
      });

      it('gives events increasing seqs that are never reused', async () => {
        const s = store();
        const seqs: number[] = [];
        for (const n of [1, 2, 3]) seqs.push(await s.tx(s.appendEvent('node', node(n), node(n), {}, n)));
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        expect(new Set(seqs).size).toBe(3);
        expect(await s.plainData.events.count()).toBe(3);
      });
    });

    describe('queries that differ between the databases', () => {
      it('searches titles and listed nodes ignoring case, with escaped wildcards', async () => {
        const s = store();
        await s.plainData.items.insert({ item_id: node(1), type: 'claim', kind: 'note', title: 'Hello_World', body: '', file_bytes: null, media_type: null, author: node(2), bot_id: null, origin: null, created_ms: 1, authorship: null });
        await s.plainData.items.insert({ item_id: node(3), type: 'claim', kind: 'note', title: 'HelloXWorld', body: '', file_bytes: null, media_type: null, author: node(2), bot_id: null, origin: null, created_ms: 2, authorship: null });
        expect((await s.plainData.items.searchTitles('%hello\\_w%', 10)).map((r) => r.item_id)).toEqual([node(1)]);
        await s.plainData.nodes.insert({ nodeId: node(2), local: true, name: 'Alice', registration: '{}', nowMs: 1 });
        await s.plainData.nodes.updateDirectory(node(2), { listed: true, phoneDiscoverable: null }, 2);
        expect((await s.plainData.nodes.searchListed('%ALICE%', 10)).map((r) => r.node_id)).toEqual([node(2)]);
      });

      it('orders statement keys bytewise and reads a stored signature', async () => {
        const s = store();
        await s.plainData.items.insert({ item_id: node(1), type: 'claim', kind: 'note', title: 't', body: '', file_bytes: null, media_type: null, author: node(2), bot_id: null, origin: null, created_ms: 1, authorship: null });
        // Upper case sorts before lower case bytewise (not in most locales' collations).
        for (const voter of ['b', 'B', 'a']) await s.plainData.votes.insertIfNew({ voter, item: node(1), value: 'yes', phase: 'vote' }, JSON.stringify({ sig: `sig-${voter}` }), null, 5);
        expect((await s.plainData.votes.keysOf(node(1))).map((k) => k.voter)).toEqual(['B', 'a', 'b']);
        expect((await s.plainData.votes.keysOf(node(1)))[0]).toEqual({ createdMs: 5, voter: 'B', value: 'yes', phase: 'vote' });
        expect(await s.plainData.votes.sigOf({ voter: 'a', item: node(1), value: 'yes', phase: 'vote' })).toBe('sig-a');
        expect(await s.plainData.votes.insertIfNew({ voter: 'a', item: node(1), value: 'yes', phase: 'vote' }, '{}', null, 6)).toBe(false);
        await s.plainData.votes.setFloor(node(1), 'a', { state: 'accepted', value: 'yes', acceptedVia: 'quorum' }, 7);
        expect(await s.plainData.votes.floorOf(node(1), 'a')).toEqual({ state: 'accepted', value: 'yes', acceptedVia: 'quorum' });
      });

      it('bumps the membership version when local nodes or peers change, and finds peer nodes by url', async () => {
        const s = store();
        const before = await s.plainData.slices.membershipVersion();
        await s.plainData.nodes.insert({ nodeId: node(1), local: true, name: '', registration: '{}', nowMs: 1 });
        await s.plainData.peers.insertIfNew('https://peer.example', null, 2);
        await s.plainData.peers.recordIdentity('https://peer.example', node(9), '0.9');
        expect(await s.plainData.slices.membershipVersion()).toBe(before + 3);
        expect(await s.plainData.slices.peerNodeIds(['https://peer.example', 'https://other.example'])).toEqual([node(9)]);
        await s.plainData.nodes.updateProfile(node(1), { name: 'n', about: null }, 3);
        expect(await s.plainData.slices.membershipVersion()).toBe(before + 3);
      });
    });

    it("moves a peer's cursor forward only (replicas probing it at once)", async () => {
      const { peers } = store().plainData;
      await peers.insertIfNew('https://peer.example', null, 1);
      await peers.advanceCursor('https://peer.example', 500, 500);
      await peers.advanceCursor('https://peer.example', 300, 0);
      expect(await peers.get('https://peer.example')).toMatchObject({ cursor: 500, pulled_events: 500 });
      await peers.advanceCursor('https://peer.example', 800, 300);
      expect(await peers.get('https://peer.example')).toMatchObject({ cursor: 800, pulled_events: 800 });
    });

    it('keeps a secret by name: the same bytes every time it is asked', async () => {
      const s = store();
      const key = await s.loadOrCreateSecret('relay-node.key');
      expect(key).toHaveLength(32);
      expect((await s.loadOrCreateSecret('relay-node.key')).equals(key)).toBe(true);
      expect((await s.loadOrCreateSecret('relay-server.key')).equals(key)).toBe(false);
    });
  });
}
