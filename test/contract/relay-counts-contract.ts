import { afterEach, describe, expect, it } from 'vitest';
import type { RelayTotals } from '../../server/storage/relay/count-repository.js';
import type { RelayStore } from '../../server/relay/relay-store.js';

/**
 * A place a relay's data lives (a data dir, a database) that stores open and reopen: `open` gives a
 * new store on the same data each time (a restart, or on PostgreSQL another replica); `dispose`
 * closes every store still open and removes the place.
 */
export type OpenRelayPlace = () => Promise<{ open: () => Promise<RelayStore>; dispose: () => Promise<void> }>;

const node = (n: number) => n.toString(16).padStart(64, '0');
const item = (n: number) => ({ item_id: node(n), type: 'claim' as const, kind: 'note', title: `Title ${n}`, body: '', file_bytes: null, media_type: null, author: node(100), bot_id: null, origin: null, created_ms: n, authorship: null });
const vote = (voter: number, itemN: number, phase = 'vote') => ({ voter: node(voter), item: node(itemN), value: 'yes', phase });

/** What the counts must be: the tables walked, as GET /network answered before decision 1100. */
async function walked(store: RelayStore): Promise<RelayTotals> {
  const d = store.plainData;
  return { nodes: await d.nodes.count(), nodes_registered_here: await d.nodes.countLocal(), items: await d.items.count(), votes: await d.votes.count(), events: await d.events.count(), peers: await d.peers.count() };
}

/** The kept counts equal `expected` and the tables walked. */
async function expectCounts(store: RelayStore, expected: RelayTotals): Promise<void> {
  expect(await walked(store)).toEqual(expected);
  expect(await store.plainData.counts.totals()).toEqual(expected);
  expect(await store.plainData.counts.nodes()).toBe(expected.nodes);
}

/**
 * The relay's public counts (GET /network, the site, GET /nodes; decision 1100) are exact without a
 * walk of the tables: after every kind of write the relay makes, after writes it undid, after a
 * restart, and with `replicas` across two stores on one database.
 */
export function describeRelayCountsContract(name: string, openPlace: OpenRelayPlace, options: { replicas: boolean }): void {
  describe(`relay counts contract: ${name}`, () => {
    let place: Awaited<ReturnType<OpenRelayPlace>> | undefined;
    afterEach(async () => {
      await place?.dispose();
      place = undefined;
    });
    const opened = async () => {
      place = await openPlace();
      return place;
    };

    it('counts each kind of insert, and no conflicting, rolled back or updating write', async () => {
      const s = await (await opened()).open();
      await expectCounts(s, { nodes: 0, nodes_registered_here: 0, items: 0, votes: 0, events: 0, peers: 0 });
      const { nodes, items, votes, peers } = s.plainData;
      // The relay's own node (held without credentials), a registration here, one learned from a peer.
      await nodes.insert({ nodeId: node(1), local: false, name: 'relay', registration: '{}', nowMs: 1 });
      await s.tx(function* () {
        yield* s.data.nodes.insert({ nodeId: node(2), local: true, name: 'two', registration: '{}', nowMs: 2 });
        yield* s.appendEvent('node', node(2), node(2), {}, 2);
      });
      expect(await nodes.insertLearned({ nodeId: node(3), name: 'three', registration: '{}', origin: 'https://peer.example', nowMs: 3 })).toBe(true);
      expect(await nodes.insertLearned({ nodeId: node(3), name: 'again', registration: '{}', origin: 'https://peer.example', nowMs: 4 })).toBe(false);
      await expectCounts(s, { nodes: 3, nodes_registered_here: 1, items: 0, votes: 0, events: 1, peers: 0 });
      // The learned node registers here; registering again, and profile changes, change no count.
      await nodes.markLocal(node(3), 'three', 5);
      await nodes.markLocal(node(3), null, 6);
      await nodes.updateProfile(node(2), { name: 'deux', about: 'x' }, 7);
      await expectCounts(s, { nodes: 3, nodes_registered_here: 2, items: 0, votes: 0, events: 1, peers: 0 });

      await s.tx(function* () {
        yield* s.data.items.insert(item(1));
        yield* s.appendEvent('item', node(100), node(1), {}, 8);
      });
      await expect(s.tx(s.data.items.insert({ ...item(1), title: 'other' }))).rejects.toThrow();
      expect(await items.attachAuthorship(node(1), node(100), '{"by":100}')).toBe(true);
      expect(await votes.insertIfNew(vote(2, 1), '{"sig":"a"}', null, 9)).toBe(true);
      // The same statement again is kept once; another document of it is no other vote.
      expect(await votes.insertIfNew(vote(2, 1), '{"sig":"b"}', null, 10)).toBe(false);
      expect(await votes.insertOtherDocument({ ...vote(2, 1), sig: 'b' }, '{"sig":"b"}', null, 10)).toBe(true);
      expect(await votes.insertIfNew(vote(3, 1, 'accept'), '{"sig":"c"}', 'https://peer.example', 11)).toBe(true);
      expect(await peers.insertIfNew('https://peer.example', null, 12)).toBe(true);
      expect(await peers.insertIfNew('https://peer.example', node(2), 13)).toBe(false);
      await expectCounts(s, { nodes: 3, nodes_registered_here: 2, items: 1, votes: 2, events: 2, peers: 1 });

      // A transaction that wrote a row of each and failed leaves no trace; the next writes count once.
      await expect(
        s.tx(function* () {
          yield* s.data.nodes.insert({ nodeId: node(4), local: true, name: '', registration: '{}', nowMs: 14 });
          yield* s.data.nodes.markLocal(node(1), null, 14);
          yield* s.data.items.insert(item(2));
          yield* s.data.votes.insertIfNew(vote(4, 2), '{"sig":"d"}', null, 14);
          yield* s.appendEvent('vote', node(4), node(2), {}, 14);
          throw new Error('refused after writing');
        }),
      ).rejects.toThrow('refused after writing');
      await expectCounts(s, { nodes: 3, nodes_registered_here: 2, items: 1, votes: 2, events: 2, peers: 1 });
      // A savepoint undone alone, inside a transaction that commits (the vote batch's shape).
      await s.tx(function* () {
        yield* s.data.nodes.insert({ nodeId: node(4), local: true, name: '', registration: '{}', nowMs: 15 });
        yield* s.appendEvent('node', node(4), node(4), {}, 15);
        yield* s.data.items.insert(item(2));
        for (const voter of [2, 3, 4]) {
          try {
            yield* s.savepoint(function* () {
              yield* s.data.votes.insertIfNew(vote(voter, 2), `{"sig":"${voter}"}`, null, 15);
              yield* s.appendEvent('vote', node(voter), node(2), {}, 15);
              if (voter === 3) throw new Error('this one fails');
            });
          } catch {
            // Undone alone.
          }
        }
      });
      await expectCounts(s, { nodes: 4, nodes_registered_here: 3, items: 2, votes: 4, events: 5, peers: 1 });
    });

    it('keeps them across a restart, and counts on from there', async () => {
      const at = await opened();
      const first = await at.open();
      await first.tx(function* () {
        yield* first.data.nodes.insert({ nodeId: node(1), local: true, name: '', registration: '{}', nowMs: 1 });
        yield* first.data.items.insert(item(1));
        yield* first.data.votes.insertIfNew(vote(1, 1), '{}', null, 1);
        yield* first.appendEvent('vote', node(1), node(1), {}, 1);
      });
      await first.plainData.nodes.insertLearned({ nodeId: node(2), name: '', registration: '{}', origin: 'https://peer.example', nowMs: 2 });
      await first.plainData.peers.insertIfNew('https://peer.example', null, 2);
      await first.close();

      const again = await at.open();
      await expectCounts(again, { nodes: 2, nodes_registered_here: 1, items: 1, votes: 1, events: 1, peers: 1 });
      await again.plainData.nodes.markLocal(node(2), null, 3);
      await again.tx(function* () {
        yield* again.data.votes.insertIfNew(vote(2, 1), '{}', null, 3);
        yield* again.appendEvent('vote', node(2), node(1), {}, 3);
      });
      await expectCounts(again, { nodes: 2, nodes_registered_here: 2, items: 1, votes: 2, events: 2, peers: 1 });
    });

    if (options.replicas) {
      it('are the same on two replicas, each seeing what the other committed at once', async () => {
        const at = await opened();
        const a = await at.open();
        const b = await at.open();
        await a.tx(function* () {
          yield* a.data.nodes.insert({ nodeId: node(1), local: true, name: '', registration: '{}', nowMs: 1 });
          yield* a.data.items.insert(item(1));
          yield* a.appendEvent('item', node(1), node(1), {}, 1);
        });
        await expectCounts(b, { nodes: 1, nodes_registered_here: 1, items: 1, votes: 0, events: 1, peers: 0 });
        await b.plainData.nodes.insertLearned({ nodeId: node(2), name: '', registration: '{}', origin: 'https://peer.example', nowMs: 2 });
        await b.plainData.nodes.markLocal(node(2), null, 2);
        await expectCounts(a, { nodes: 2, nodes_registered_here: 2, items: 1, votes: 0, events: 1, peers: 0 });

        // Both write at once, each vote with its event; some statements both send (one is kept).
        const voteOn = (store: RelayStore, voter: number, phase: string) =>
          store.tx(function* () {
            if (yield* store.data.votes.insertIfNew(vote(voter, 1, phase), '{}', null, 3)) yield* store.appendEvent('vote', node(voter), node(1), {}, 3);
          });
        await Promise.all([1, 2, 3, 4, 5, 6].flatMap((voter) => [voteOn(a, voter, 'vote'), voteOn(b, voter, 'vote'), voteOn(b, voter, 'accept')]));
        const expected = { nodes: 2, nodes_registered_here: 2, items: 1, votes: 12, events: 13, peers: 0 };
        await expectCounts(a, expected);
        await expectCounts(b, expected);
      });
    }
  });
}
