import { describe, expect, it } from 'vitest';
import type { RelayStore } from '../../server/relay/relay-store.js';
import type { Steps } from '../../server/storage/sql-steps.js';
import { freshStorePerTest, type OpenRelayStore } from './relay-store-contract.js';

/**
 * Two relay stores on one database, as two replicas hold them, and a way to make "another replica"
 * hold the write lock with an event of its own appended and not yet committed.
 */
export type OpenRelayReplicas = () => Promise<{
  a: RelayStore;
  b: RelayStore;
  /**
   * Settles once a connection of its own holds the write lock with one event appended; it commits
   * a while later by itself (without this process's help) and `committed` settles then.
   */
  holdWriteLock: () => Promise<{ committed: Promise<void> }>;
  /**
   * A step that waits, inside the transaction running it, until `release` is called: it takes a
   * lock that a connection of the test's holds (PostgreSQL), so a writer can be held between its
   * event and its commit while another writer runs.
   */
  gate: () => Promise<{ wait: () => Steps<void>; release: () => Promise<void>; reached: () => Promise<unknown> }>;
  /** Settles once a store's transaction waits for the relay's write lock (seen in pg_locks). */
  someoneWaitsForWriteLock: () => Promise<void>;
  dispose: () => Promise<void>;
}>;

const node = (n: number) => n.toString(16).padStart(64, '0');
const item = (n: number) => ({ item_id: node(n), type: 'claim' as const, kind: 'note', title: `Title ${n}`, body: '', file_bytes: null, media_type: null, author: node(100), bot_id: null, origin: null, created_ms: n, authorship: null });

/**
 * Decision 0440's guarantees, which GET /events and the vote group commit stand on: an event's seq
 * order is its commit order (a reader paging by `seq > since` misses none and sees none twice),
 * a batch keeps or undoes each savepoint on its own inside one commit, and caches are dropped when
 * rows they hold may no longer be the database's. On SQLite the store is the only writer; on
 * PostgreSQL (`replicas`) the same holds between two stores on one database.
 */
export function describeRelayGuaranteesContract(name: string, open: OpenRelayStore, replicas?: OpenRelayReplicas): void {
  describe(`relay store guarantees (decision 0440): ${name}`, () => {
    describe('one store', () => {
    const store = freshStorePerTest(open);

    it('keeps each savepoint of a batch or undoes it alone, its event with it, in one commit', async () => {
      const s = store();
      const outcomes: string[] = [];
      await s.tx(function* () {
        for (const n of [1, 2, 3]) {
          try {
            yield* s.savepoint(function* () {
              yield* s.data.items.insert(item(n));
              yield* s.appendEvent('item', node(100), node(n), { n }, n);
              if (n === 2) throw new Error('vote 2 refused after writing');
            });
            outcomes.push(`kept ${n}`);
          } catch (err) {
            outcomes.push((err as Error).message);
          }
        }
      });
      expect(outcomes).toEqual(['kept 1', 'vote 2 refused after writing', 'kept 3']);
      expect(await Promise.all([1, 2, 3].map((n) => s.plainData.items.exists(node(n))))).toEqual([true, false, true]);
      const events = await s.plainData.events.after(0, [], 10);
      expect(events.map((e) => e.subject)).toEqual([node(1), node(3)]);
      expect(events[1]!.seq).toBeGreaterThan(events[0]!.seq);
    });

    it('undoes the savepoints it kept when the batch around them fails, and tells the cache listeners', async () => {
      const s = store();
      let told = 0;
      s.onCachesInvalid(() => told++);
      await expect(
        s.tx(function* () {
          for (const n of [1, 2]) yield* s.savepoint(() => s.appendEvent('node', node(n), node(n), {}, n));
          yield* s.data.items.insert(item(1));
          throw new Error('the batch failed after its savepoints');
        }),
      ).rejects.toThrow('the batch failed after its savepoints');
      expect(await s.plainData.events.count()).toBe(0);
      expect(await s.plainData.items.exists(node(1))).toBe(false);
      expect(told).toBeGreaterThan(0);
    });

    it('lets a reader paging by seq after every commit see each committed event once, in commit order', async () => {
      const s = store();
      const seen: string[] = [];
      let since = 0;
      const page = async () => {
        for (const event of await s.plainData.events.after(since, [], 100)) {
          seen.push(event.subject);
          since = event.seq;
        }
      };
      const committed: string[] = [];
      for (const n of [1, 2, 3, 4, 5, 6]) {
        try {
          await s.tx(function* () {
            yield* s.appendEvent('node', node(n), node(n), {}, n);
            if (n % 3 === 0) throw new Error('rolled back');
          });
          committed.push(node(n));
        } catch {
          // Its seq is never handed out again: the next commit's is larger still.
        }
        await page();
      }
      expect(seen).toEqual(committed);
      expect(seen).toHaveLength(4);
    });

    it('runs concurrent rules of one store one at a time, in the order they came: writers commit in seq order, a read sees the write before it, a reader after each commit misses none', async () => {
      const s = store();
      // Each rule's steps note where they start and end. On PostgreSQL every statement is awaited:
      // without the store's queue, a read started right after a writer (it takes no write lock)
      // would run its steps while the writer's statements are out, before the write it follows.
      const trace: string[] = [];
      const seen: string[] = [];
      let since = 0;
      // One reader, paging after each commit in turn (as one GET /events client does).
      let reading = Promise.resolve();
      const page = async () => {
        const events = await s.plain(function* () {
          trace.push('page in');
          const after = yield* s.data.events.after(since, [], 100);
          trace.push('page out');
          return after;
        });
        for (const event of events) {
          seen.push(event.subject);
          since = event.seq;
        }
      };
      const commits: string[] = [];
      const writers: Promise<unknown>[] = [];
      const looks: Promise<boolean>[] = [];
      // Started together, not awaited in turn: a writer, then a read of what it writes, eight times.
      for (const n of [1, 2, 3, 4, 5, 6, 7, 8]) {
        writers.push(
          s
            .tx(function* () {
              trace.push(`write ${n} in`);
              yield* s.data.items.insert(item(n));
              const seq = yield* s.appendEvent('item', node(100), node(n), { n }, n);
              trace.push(`write ${n} out`);
              return seq;
            })
            .then(() => {
              commits.push(node(n));
              reading = reading.then(page);
              return reading;
            }),
        );
        looks.push(
          s.plain(function* () {
            trace.push(`look ${n} in`);
            const there = yield* s.data.items.exists(node(n));
            trace.push(`look ${n} out`);
            return there;
          }),
        );
      }
      await Promise.all(writers);
      await reading;
      // Each rule's steps end before the next rule's begin, in the order the rules were started
      // (the pages were asked for after all of them, at the first commit).
      const rules = [1, 2, 3, 4, 5, 6, 7, 8].flatMap((n) => [`write ${n} in`, `write ${n} out`, `look ${n} in`, `look ${n} out`]);
      expect(trace).toEqual([...rules, ...Array.from({ length: 8 }, () => ['page in', 'page out']).flat()]);
      expect(await Promise.all(looks)).toEqual(Array.from({ length: 8 }, () => true));
      const all = (await s.plainData.events.after(0, [], 100)).map((e) => e.subject);
      expect(seen).toEqual(all);
      expect(all).toEqual(commits);
      expect(all).toHaveLength(8);
    });
    });

    if (!replicas) return;
    describe('two stores on one database', () => {
      const opened: { current?: Awaited<ReturnType<OpenRelayReplicas>> } = {};
      const pair = async () => {
        await opened.current?.dispose();
        opened.current = await replicas();
        return opened.current;
      };
      const disposeAfter = async <T>(fn: () => Promise<T>) => {
        try {
          return await fn();
        } finally {
          await opened.current?.dispose();
          opened.current = undefined;
        }
      };

      it("drops a store's caches when the other committed, before its next transaction reads and at its next refresh", () =>
        disposeAfter(async () => {
          const { a, b } = await pair();
          const told: string[] = [];
          a.onCachesInvalid(() => told.push('invalid'));
          await a.tx(a.appendEvent('node', node(1), node(1), {}, 1));
          await a.refresh();
          const settled = told.length;
          // Its own commits and looks change nothing.
          await a.tx(a.appendEvent('node', node(2), node(2), {}, 2));
          await a.refresh();
          expect(told).toHaveLength(settled);
          // The other store's commit: the next transaction drops the caches before its body runs.
          await b.tx(b.appendEvent('node', node(3), node(3), {}, 3));
          await a.tx(function* () {
            told.push('body');
          });
          expect(told.slice(settled)).toEqual(['invalid', 'body']);
          // And a refresh (what every request does first) notices one too, once.
          await b.tx(b.appendEvent('node', node(4), node(4), {}, 4));
          await a.refresh();
          await a.refresh();
          expect(told.slice(settled)).toEqual(['invalid', 'body', 'invalid']);
        }));

      it('shares one look among refreshes asked for while it waits in the queue, and that look sees a commit made meanwhile', { timeout: 30_000 }, () =>
        disposeAfter(async () => {
          const { a, b, gate } = await pair();
          await a.refresh();
          const told: string[] = [];
          a.onCachesInvalid(() => told.push('invalid'));
          const { wait, release, reached } = await gate();
          // a's queue is busy with a rule held at the gate: the refreshes asked for now wait behind it.
          const busy = a.plain(function* () {
            yield* wait();
          });
          busy.catch(() => undefined);
          await reached();
          const first = a.refresh();
          const second = a.refresh();
          // One look for both (each queued its own before): requests arriving together read the generation once.
          expect(second).toBe(first);
          // A commit made after both were asked for and before the look begins: the shared look sees it.
          await b.tx(b.appendEvent('node', node(5), node(5), {}, 5));
          await release();
          await Promise.all([busy, first, second]);
          // The look saw b's commit (its caches told once). Two looks of their own would see it too and
          // tell the same: the sharing itself is what `toBe(first)` above checks.
          expect(told).toEqual(['invalid']);
          // Once the look has run, the next refresh is a look of its own.
          expect(a.refresh()).not.toBe(first);
        }));

      it('commits events in seq order: a store waits for the write lock the other holds', { timeout: 30_000 }, () =>
        disposeAfter(async () => {
          const { a, b, holdWriteLock } = await pair();
          const held = await holdWriteLock();
          // The holder's event took its seq first; a's commits after it, so a reader never pages past it.
          const seq = await a.tx(a.appendEvent('node', node(2), node(2), {}, 2));
          // Read at a's commit: had a committed without the lock, the holder's event would not be there yet.
          expect((await a.plainData.events.after(0, [], 10)).map((e) => e.seq)).toEqual([seq - 1, seq]);
          await held.committed;
          const fromB = await b.tx(b.appendEvent('node', node(3), node(3), {}, 3));
          expect(fromB).toBeGreaterThan(seq);
          expect((await b.plainData.events.after(seq, [], 10)).map((e) => e.seq)).toEqual([fromB]);
        }));

      it('commits two interleaving async writers in seq order: the second waits for the first, held between its event and its commit', { timeout: 30_000 }, () =>
        disposeAfter(async () => {
          const { a, b, gate, someoneWaitsForWriteLock } = await pair();
          const { wait, release, reached } = await gate();
          // a takes its seq, then waits inside its transaction (the event loop runs on meanwhile).
          const first = a.tx(function* () {
            const seq = yield* a.appendEvent('node', node(1), node(1), {}, 1);
            yield* wait();
            return seq;
          });
          first.catch(() => undefined);
          await reached();
          // b starts while a is held. With the write lock it waits for a; without it b would commit
          // first, and a reader paging after b's commit would step past a's smaller seq for good.
          let secondCommitted = false;
          const second = b.tx(b.appendEvent('node', node(2), node(2), {}, 2)).then((seq) => {
            secondCommitted = true;
            return seq;
          });
          second.catch(() => undefined);
          await Promise.race([someoneWaitsForWriteLock(), second]);
          const seenBeforeRelease = secondCommitted ? (await b.plainData.events.after(0, [], 10)).map((e) => e.seq) : [];
          await release();
          const [seqA, seqB] = await Promise.all([first, second]);
          expect(seqA).toBeLessThan(seqB);
          // Nothing committed with a larger seq while a smaller one was still open.
          expect(seenBeforeRelease).toEqual([]);
          const seen: number[] = [];
          for (const event of await b.plainData.events.after(0, [], 10)) seen.push(event.seq);
          expect(seen).toEqual([seqA, seqB]);
        }));
    });
  });
}
