import { describe, expect, it } from 'vitest';
import type { RelayStore } from '../../server/relay/relay-store.js';
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
   * a while later by itself (without this process's help: a store may wait for the lock
   * synchronously) and `committed` settles then.
   */
  holdWriteLock: () => Promise<{ committed: Promise<void> }>;
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

    it('keeps each savepoint of a batch or undoes it alone, its event with it, in one commit', () => {
      const s = store();
      const outcomes: string[] = [];
      s.tx(() => {
        for (const n of [1, 2, 3]) {
          try {
            s.tx(() => {
              s.syncData.items.insert(item(n));
              s.run(s.appendEvent('item', node(100), node(n), { n }, n));
              if (n === 2) throw new Error('vote 2 refused after writing');
            });
            outcomes.push(`kept ${n}`);
          } catch (err) {
            outcomes.push((err as Error).message);
          }
        }
      });
      expect(outcomes).toEqual(['kept 1', 'vote 2 refused after writing', 'kept 3']);
      expect([1, 2, 3].map((n) => s.syncData.items.exists(node(n)))).toEqual([true, false, true]);
      const events = s.syncData.events.after(0, [], 10);
      expect(events.map((e) => e.subject)).toEqual([node(1), node(3)]);
      expect(events[1]!.seq).toBeGreaterThan(events[0]!.seq);
    });

    it('undoes the savepoints it kept when the batch around them fails, and tells the cache listeners', () => {
      const s = store();
      let told = 0;
      s.onCachesInvalid(() => told++);
      expect(() =>
        s.tx(() => {
          for (const n of [1, 2]) s.tx(() => s.run(s.appendEvent('node', node(n), node(n), {}, n)));
          s.syncData.items.insert(item(1));
          throw new Error('the batch failed after its savepoints');
        }),
      ).toThrow('the batch failed after its savepoints');
      expect(s.syncData.events.count()).toBe(0);
      expect(s.syncData.items.exists(node(1))).toBe(false);
      expect(told).toBeGreaterThan(0);
    });

    it('lets a reader paging by seq after every commit see each committed event once, in commit order', () => {
      const s = store();
      const seen: string[] = [];
      let since = 0;
      const page = () => {
        for (const event of s.syncData.events.after(since, [], 100)) {
          seen.push(event.subject);
          since = event.seq;
        }
      };
      const committed: string[] = [];
      for (const n of [1, 2, 3, 4, 5, 6]) {
        try {
          s.tx(() => {
            s.run(s.appendEvent('node', node(n), node(n), {}, n));
            if (n % 3 === 0) throw new Error('rolled back');
          });
          committed.push(node(n));
        } catch {
          // Its seq is never handed out again: the next commit's is larger still.
        }
        page();
      }
      expect(seen).toEqual(committed);
      expect(seen).toHaveLength(4);
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
          a.tx(() => a.run(a.appendEvent('node', node(1), node(1), {}, 1)));
          a.refresh();
          const settled = told.length;
          // Its own commits and looks change nothing.
          a.tx(() => a.run(a.appendEvent('node', node(2), node(2), {}, 2)));
          a.refresh();
          expect(told).toHaveLength(settled);
          // The other store's commit: the next transaction drops the caches before its body runs.
          b.tx(() => b.run(b.appendEvent('node', node(3), node(3), {}, 3)));
          a.tx(() => told.push('body'));
          expect(told.slice(settled)).toEqual(['invalid', 'body']);
          // And a refresh (what every request does first) notices one too, once.
          b.tx(() => b.run(b.appendEvent('node', node(4), node(4), {}, 4)));
          a.refresh();
          a.refresh();
          expect(told.slice(settled)).toEqual(['invalid', 'body', 'invalid']);
        }));

      it('commits events in seq order: a store waits for the write lock the other holds', { timeout: 30_000 }, () =>
        disposeAfter(async () => {
          const { a, b, holdWriteLock } = await pair();
          const held = await holdWriteLock();
          // The holder's event took its seq first; a's commits after it, so a reader never pages past it.
          const seq = a.tx(() => a.run(a.appendEvent('node', node(2), node(2), {}, 2)));
          // Read before anything else waits: had a committed without the lock, the holder's event would not be there yet.
          expect(a.syncData.events.after(0, [], 10).map((e) => e.seq)).toEqual([seq - 1, seq]);
          await held.committed;
          const fromB = b.tx(() => b.run(b.appendEvent('node', node(3), node(3), {}, 3)));
          expect(fromB).toBeGreaterThan(seq);
          expect(b.syncData.events.after(seq, [], 10).map((e) => e.seq)).toEqual([fromB]);
        }));
    });
  });
}
