import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { generateNodeKey } from '../../../core/relay/node-id.js';
import { quorumSetHash } from '../../../core/relay/quorum-set.js';
import { type OpenedRelayStore, openPostgresRelayStore, openSqliteRelayStore } from '../../../test/support/relay-store-openers.js';
import { sliceDeclarationBy } from '../../../test/support/relay-test-kit.js';
import { Voting } from '../domain/voting.js';
import { Slice } from './slice.js';

const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 29, 12)));
const node = generateNodeKey();
const [memberA, memberB] = [generateNodeKey(), generateNodeKey()];

/** Both engines: SQLite in a fresh data dir, PostgreSQL on a fresh database. */
const engines: [string, () => Promise<OpenedRelayStore>][] = [
  ['sqlite', openSqliteRelayStore],
  ['postgres', () => openPostgresRelayStore()],
];

describe.each(engines)('Slice.declare (POST /slice/declare) on %s', (_name, open) => {
  it('answers each of two declarations sent together with its own slice and hash; the newer is published', async () => {
    const { store, dispose } = await open();
    try {
      const voting = new Voting({ store, clock, selfKey: generateNodeKey() });
      await store.tx(store.data.nodes.insert({ nodeId: node.nodeId, local: true, name: 'declaring node', registration: '{}', nowMs: clock.nowMs() }));
      const slices = new Slice({ store, voting, clock });
      const older = sliceDeclarationBy(node, { t: 1, v: [memberA.nodeId] }, clock.nowMs() - 2000);
      const newer = sliceDeclarationBy(node, { t: 1, v: [memberB.nodeId] }, clock.nowMs() - 1000);
      // Started together, not awaited in turn: the older's write commits first, the newer's next,
      // and the older's answer must still be the older's (read in its own transaction, not after).
      const [first, second] = await Promise.all([slices.declare(older), slices.declare(newer)]);
      expect(first).toMatchObject({ node_id: node.nodeId, slice_hash: older.slice_hash, slice: { v: [memberA.nodeId] } });
      expect(second).toMatchObject({ node_id: node.nodeId, slice_hash: newer.slice_hash, slice: { v: [memberB.nodeId] } });
      for (const answer of [first, second]) expect(quorumSetHash(answer.slice)).toBe(answer.slice_hash);
      expect((await store.plain(voting.publishedSlice(node.nodeId)))?.qset).toEqual(second.slice);
    } finally {
      await dispose();
    }
  });

  it('refuses an older declaration than the published one, naming the published updated_ms', async () => {
    const { store, dispose } = await open();
    try {
      const voting = new Voting({ store, clock, selfKey: generateNodeKey() });
      await store.tx(store.data.nodes.insert({ nodeId: node.nodeId, local: true, name: 'declaring node', registration: '{}', nowMs: clock.nowMs() }));
      const slices = new Slice({ store, voting, clock });
      const newerMs = clock.nowMs() - 1000;
      await slices.declare(sliceDeclarationBy(node, { t: 1, v: [memberB.nodeId] }, newerMs));
      await expect(slices.declare(sliceDeclarationBy(node, { t: 1, v: [memberA.nodeId] }, newerMs - 1000))).rejects.toMatchObject({ code: 'declaration_superseded', message: expect.stringContaining(`updated_ms ${newerMs}`) });
      // The same declaration again is answered, not refused.
      const again = sliceDeclarationBy(node, { t: 1, v: [memberB.nodeId] }, newerMs);
      expect(await slices.declare(again)).toMatchObject({ slice_hash: again.slice_hash, slice: { v: [memberB.nodeId] } });
    } finally {
      await dispose();
    }
  });
});
