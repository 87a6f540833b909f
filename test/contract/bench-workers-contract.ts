import { describe, expect, it } from 'vitest';
import type { BenchStore } from '../../server/storage/bench/bench-store.js';

const T0 = 1_700_000_000_000;

/** The worker registry part of the store contract, run by `describeBenchStoreContract`. */
export function describeWorkersContract(name: string, withStore: (body: (store: BenchStore) => Promise<void>) => Promise<void>): void {
  describe(`bench store contract, workers: ${name}`, () => {
    it('keeps workers by id and by token hash, oldest first, never two with one token', () =>
      withStore(async (store) => {
        await store.workers.insert({ workerId: 'wk_a', label: 'pi-1', tokenSha256: 'a'.repeat(64), createdAtMs: T0 });
        await store.workers.insert({ workerId: 'wk_b', label: 'pi-2', tokenSha256: 'b'.repeat(64), createdAtMs: T0 + 1 });
        await expect(store.workers.insert({ workerId: 'wk_c', label: 'dup', tokenSha256: 'a'.repeat(64), createdAtMs: T0 + 2 })).rejects.toThrow();
        expect(await store.workers.findByTokenSha256('b'.repeat(64))).toMatchObject({ workerId: 'wk_b', label: 'pi-2', revokedAtMs: null, lastSeenAtMs: null, boards: [] });
        expect(await store.workers.findByTokenSha256('c'.repeat(64))).toBeUndefined();
        expect((await store.workers.list()).map((w) => w.workerId)).toEqual(['wk_a', 'wk_b']);
      }));

    it('records when a worker was last heard from (never going back) and the boards it last reported', () =>
      withStore(async (store) => {
        await store.workers.insert({ workerId: 'wk_a', label: 'pi-1', tokenSha256: 'a'.repeat(64), createdAtMs: T0 });
        await store.workers.heardFrom('wk_a', { nowMs: T0 + 10, boards: [{ board: 'pico', backend: 'sim', available: true, reason: null }] });
        await store.workers.heardFrom('wk_a', { nowMs: T0 + 5 });
        expect(await store.workers.get('wk_a')).toMatchObject({ lastSeenAtMs: T0 + 10, boards: [{ board: 'pico', backend: 'sim', available: true, reason: null }] });
        await store.workers.heardFrom('wk_a', { nowMs: T0 + 20, boards: [{ board: 'uno', backend: 'probe', available: false, reason: 'probe not found' }] });
        expect(await store.workers.get('wk_a')).toMatchObject({ lastSeenAtMs: T0 + 20, boards: [{ board: 'uno', backend: 'probe', available: false, reason: 'probe not found' }] });
      }));

    it('revokes a worker once; the first revocation time stands', () =>
      withStore(async (store) => {
        await store.workers.insert({ workerId: 'wk_a', label: 'pi-1', tokenSha256: 'a'.repeat(64), createdAtMs: T0 });
        expect(await store.workers.revoke('wk_a', T0 + 1)).toMatchObject({ revokedAtMs: T0 + 1 });
        expect(await store.workers.revoke('wk_a', T0 + 2)).toMatchObject({ revokedAtMs: T0 + 1 });
        expect(await store.workers.revoke('wk_missing', T0 + 3)).toBeUndefined();
      }));
  });
}
