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
    it('keeps code sends of the last hour and one open code per number and purpose', () => {
      const { phoneCodes } = store().syncData;
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
      const s = store();
      const { nodes, phones } = s.syncData;
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
      const { nodes, bots } = store().syncData;
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
      const s = store();
      const { items, events } = s.syncData;
      for (const n of [1, 2, 3]) {
        items.insert({ item_id: node(n), type: 'claim', kind: 'note', title: `t${n}`, body: '', file_bytes: null, media_type: null, author: node(n % 2), bot_id: null, origin: null, created_ms: n, authorship: null });
        s.tx(() => s.run(s.appendEvent('item', node(n % 2), node(n), { n }, n)));
      }
      const page = items.page(Number.MAX_SAFE_INTEGER, undefined, 2);
      expect(page.map((r) => r.title)).toEqual(['t3', 't2']);
      expect(items.page(page.at(-1)!.cursor, undefined, 2).map((r) => r.title)).toEqual(['t1']);
      expect(items.page(Number.MAX_SAFE_INTEGER, node(1), 5).map((r) => r.title)).toEqual(['t3', 't1']);
      expect(events.after(0, [], 10).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(events.after(1, [node(1)], 10).map((e) => JSON.parse(e.payload))).toEqual([{ n: 3 }]);
    });

    it('pairs two nodes once, in id order, seen from both sides', () => {
      const { social } = store().syncData;
      social.insertPairing({ tokenHash: 'h', nodeId: node(2), nowMs: 1, expiresMs: 100 });
      social.confirmPairing(social.pairing('h')!, node(1), 5);
      expect(social.pairing('h')).toMatchObject({ confirmed_by: node(1), confirmed_ms: 5 });
      expect(social.pairs(10)).toEqual([[node(1), node(2)]]);
      expect(social.pairedWith(node(2))).toEqual([node(1)]);
      expect(social.pairedWith(node(1))).toEqual([node(2)]);
    });
  });

    describe('transactions', () => {
      const item = (n: number) => ({ item_id: node(n), type: 'claim' as const, kind: 'note', title: `Title ${n}`, body: '', file_bytes: null, media_type: null, author: node(100), bot_id: null, origin: null, created_ms: n, authorship: null });

      it('commits a change and its event together, or neither', () => {
        const s = store();
        s.tx(() => {
          s.syncData.items.insert(item(1));
          s.run(s.appendEvent('item', node(100), node(1), { n: 1 }, 1));
        });
        expect(() =>
          s.tx(() => {
            s.syncData.items.insert(item(2));
            s.run(s.appendEvent('item', node(100), node(2), { n: 2 }, 2));
            throw new Error('refused after writing');
          }),
        ).toThrow('refused after writing');
        expect(s.syncData.items.count()).toBe(1);
        expect(s.syncData.events.after(0, [], 10).map((e) => e.subject)).toEqual([node(1)]);
      });

      it('rolls back a nested transaction alone (a savepoint), keeping the outer one', () => {
        const s = store();
        const outcomes: string[] = [];
        s.tx(() => {
          for (const n of [1, 2, 3]) {
            try {
              s.tx(() => {
                s.syncData.items.insert(item(n));
                if (n === 2) throw new Error('this one fails');
              });
              outcomes.push(`ok ${n}`);
            } catch (err) {
              outcomes.push((err as Error).message);
            }
          }
        });
        expect(outcomes).toEqual(['ok 1', 'this one fails', 'ok 3']);
        expect(s.syncData.items.exists(node(1)) && s.syncData.items.exists(node(3))).toBe(true);
        expect(s.syncData.items.exists(node(2))).toBe(false);
      });

      it('tells its cache listeners when a transaction rolls back', () => {
        const s = store();
        let told = 0;
        s.onCachesInvalid(() => told++);
        const before = told;
        expect(() => s.tx(() => { throw new Error('no'); })).toThrow('no');
        expect(told).toBeGreaterThan(before);
      });

      it('refuses a second item with the same id and keeps the first', () => {
        const s = store();
        s.tx(() => s.syncData.items.insert(item(1)));
        expect(() => s.tx(() => s.syncData.items.insert({ ...item(1), title: 'other' }))).toThrow();
        expect(s.syncData.items.get(node(1))?.title).toBe('Title 1');
      });

      it('refuses to append an event outside a transaction (it would commit without the write lock)', () => {
        const s = store();
        expect(() => s.run(s.appendEvent('node', node(1), node(1), {}, 1))).toThrow('outside a transaction');
        expect(s.syncData.events.count()).toBe(0);
      });

      it('gives events increasing seqs that are never reused', () => {
        const s = store();
        const seqs = [1, 2, 3].map((n) => s.tx(() => s.run(s.appendEvent('node', node(n), node(n), {}, n))));
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        expect(new Set(seqs).size).toBe(3);
        expect(s.syncData.events.count()).toBe(3);
      });
    });

    describe('queries that differ between the databases', () => {
      it('searches titles and listed nodes ignoring case, with escaped wildcards', () => {
        const s = store();
        s.syncData.items.insert({ item_id: node(1), type: 'claim', kind: 'note', title: 'Hello_World', body: '', file_bytes: null, media_type: null, author: node(2), bot_id: null, origin: null, created_ms: 1, authorship: null });
        s.syncData.items.insert({ item_id: node(3), type: 'claim', kind: 'note', title: 'HelloXWorld', body: '', file_bytes: null, media_type: null, author: node(2), bot_id: null, origin: null, created_ms: 2, authorship: null });
        expect(s.syncData.items.searchTitles('%hello\\_w%', 10).map((r) => r.item_id)).toEqual([node(1)]);
        s.syncData.nodes.insert({ nodeId: node(2), local: true, name: 'Alice', registration: '{}', nowMs: 1 });
        s.syncData.nodes.updateDirectory(node(2), { listed: true, phoneDiscoverable: null }, 2);
        expect(s.syncData.nodes.searchListed('%ALICE%', 10).map((r) => r.node_id)).toEqual([node(2)]);
      });

      it('orders statement keys bytewise and reads a stored signature', () => {
        const s = store();
        s.syncData.items.insert({ item_id: node(1), type: 'claim', kind: 'note', title: 't', body: '', file_bytes: null, media_type: null, author: node(2), bot_id: null, origin: null, created_ms: 1, authorship: null });
        // Upper case sorts before lower case bytewise (not in most locales' collations).
        for (const voter of ['b', 'B', 'a']) s.syncData.votes.insertIfNew({ voter, item: node(1), value: 'yes', phase: 'vote' }, JSON.stringify({ sig: `sig-${voter}` }), null, 5);
        expect(s.syncData.votes.keysOf(node(1)).map((k) => k.voter)).toEqual(['B', 'a', 'b']);
        expect(s.syncData.votes.keysOf(node(1))[0]).toEqual({ createdMs: 5, voter: 'B', value: 'yes', phase: 'vote' });
        expect(s.syncData.votes.sigOf({ voter: 'a', item: node(1), value: 'yes', phase: 'vote' })).toBe('sig-a');
        expect(s.syncData.votes.insertIfNew({ voter: 'a', item: node(1), value: 'yes', phase: 'vote' }, '{}', null, 6)).toBe(false);
        s.syncData.votes.setFloor(node(1), 'a', { state: 'accepted', value: 'yes', acceptedVia: 'quorum' }, 7);
        expect(s.syncData.votes.floorOf(node(1), 'a')).toEqual({ state: 'accepted', value: 'yes', acceptedVia: 'quorum' });
      });

      it('bumps the membership version when local nodes or peers change, and finds peer nodes by url', () => {
        const s = store();
        const before = s.syncData.slices.membershipVersion();
        s.syncData.nodes.insert({ nodeId: node(1), local: true, name: '', registration: '{}', nowMs: 1 });
        s.syncData.peers.insertIfNew('https://peer.example', null, 2);
        s.syncData.peers.recordIdentity('https://peer.example', node(9), '0.9');
        expect(s.syncData.slices.membershipVersion()).toBe(before + 3);
        expect(s.syncData.slices.peerNodeIds(['https://peer.example', 'https://other.example'])).toEqual([node(9)]);
        s.syncData.nodes.updateProfile(node(1), { name: 'n', about: null }, 3);
        expect(s.syncData.slices.membershipVersion()).toBe(before + 3);
      });
    });

    it("moves a peer's cursor forward only (replicas probing it at once)", () => {
      const { peers } = store().syncData;
      peers.insertIfNew('https://peer.example', null, 1);
      peers.advanceCursor('https://peer.example', 500, 500);
      peers.advanceCursor('https://peer.example', 300, 0);
      expect(peers.get('https://peer.example')).toMatchObject({ cursor: 500, pulled_events: 500 });
      peers.advanceCursor('https://peer.example', 800, 300);
      expect(peers.get('https://peer.example')).toMatchObject({ cursor: 800, pulled_events: 800 });
    });

    it('keeps a secret by name: the same bytes every time it is asked', () => {
      const s = store();
      const key = s.loadOrCreateSecret('relay-node.key');
      expect(key).toHaveLength(32);
      expect(s.loadOrCreateSecret('relay-node.key').equals(key)).toBe(true);
      expect(s.loadOrCreateSecret('relay-server.key').equals(key)).toBe(false);
    });
  });
}
