import { describe, expect, it } from 'vitest';
import { benchStoreDialects } from '../../../test/support/bench-store-dialects.js';
import { postgresBenchStores } from '../../../test/support/postgres-bench-stores.js';
import { BoundedCache } from './bounded-cache.js';
import type { SqlBenchStore } from './sql-bench-store.js';

/**
 * What a store keeps in memory instead of asking the database again (decision 0600): only rows
 * that never change. Counted in statements (the store's counters), so each test fails when the
 * cache is gone, and when it keeps what it must not (a miss, a copy a caller changed).
 */
const T0 = 1_700_000_000_000;
const agent = { agentId: 'ag_1', label: 'ci', tokenSha256: 'a'.repeat(64), createdAtMs: T0 };

const dialects = benchStoreDialects;

/** Statements `fn` runs on `store`. */
async function statementsOf(store: SqlBenchStore, fn: () => Promise<unknown>): Promise<number> {
  const before = store.counters.statements;
  await fn();
  return store.counters.statements - before;
}

describe.each(dialects)('agents kept once read: %s', (_name, open) => {
  it('asks the database for an agent once, by token or by id, and never keeps a miss', async () => {
    const { store, close } = await open();
    try {
      // Not there yet (registered meanwhile on another replica, say): asked again next time.
      expect(await store.findAgentByTokenSha256(agent.tokenSha256)).toBeUndefined();
      expect(await store.getAgent(agent.agentId)).toBeUndefined();
      await store.insertAgent(agent);
      expect(await statementsOf(store, async () => expect(await store.findAgentByTokenSha256(agent.tokenSha256)).toEqual(agent))).toBe(1);
      expect(await statementsOf(store, async () => expect(await store.findAgentByTokenSha256(agent.tokenSha256)).toEqual(agent))).toBe(0);
      expect(await statementsOf(store, async () => expect(await store.getAgent(agent.agentId)).toEqual(agent))).toBe(0);
      // A caller changing the record it got changes nothing kept.
      const got = (await store.getAgent(agent.agentId))!;
      got.label = 'changed';
      expect(await store.findAgentByTokenSha256(agent.tokenSha256)).toEqual(agent);
      expect(await store.findAgentByTokenSha256('b'.repeat(64))).toBeUndefined();
    } finally {
      await close();
    }
  });
});

describe('firmware known stored: postgres', () => {
  it('stores an image once, fetches it once, and hands out copies', async () => {
    const { stores, close } = await postgresBenchStores(1);
    const store = stores[0]!;
    try {
      const sha = 'f'.repeat(64);
      const bytes = new Uint8Array([1, 2, 3]);
      expect(await statementsOf(store, () => store.firmware.put(sha, bytes))).toBe(1);
      expect(await statementsOf(store, () => store.firmware.put(sha, bytes))).toBe(0);
      expect(await statementsOf(store, async () => expect(await store.firmware.get(sha)).toEqual(bytes))).toBe(1);
      const got = (await store.firmware.get(sha))!;
      got[0] = 99;
      expect(await statementsOf(store, async () => expect(await store.firmware.get(sha)).toEqual(bytes))).toBe(0);
      // A hash nobody stored is asked for every time (another replica may store it meanwhile).
      expect(await store.firmware.get('e'.repeat(64))).toBeUndefined();
      expect(await statementsOf(store, () => store.firmware.get('e'.repeat(64)))).toBe(1);
    } finally {
      await close();
    }
  });
});

describe('BoundedCache', () => {
  it('forgets the entry set longest ago beyond its size, and a set again counts as new', () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 3);
    cache.set('c', 4);
    expect([cache.get('a'), cache.get('b'), cache.get('c'), cache.size]).toEqual([3, undefined, 4, 2]);
    expect(() => new BoundedCache(0)).toThrow(/at least one/);
  });
});
