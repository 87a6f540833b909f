import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { afterFailure, afterSuccess, type BoardHealth, healthyBoard, InMemoryQuarantineStore } from '../../../backends/probe/quarantine-store.js';
import { SqliteBenchStore } from './sqlite-bench-store.js';


const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const healthArb: fc.Arbitrary<BoardHealth> = fc.record({
  consecutiveFailures: fc.nat({ max: 1000 }),
  lastFailure: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
  quarantine: fc.option(fc.record({ sinceMs: fc.nat(), reason: fc.string({ maxLength: 40 }) }), { nil: undefined }),
});

describe('SqlBoardHealthStore on SQLite', () => {
  it('treats a board never seen as healthy', async () => {
    const store = new SqliteBenchStore(':memory:').boardHealth;
    expect(await store.get('pico')).toEqual(healthyBoard);
  });

  it('keeps a quarantine across a reopen of the bench database file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-quarantine-'));
    dirs.push(dir);
    const file = path.join(dir, 'bench.sqlite');
    let health = healthyBoard;
    for (let i = 0; i < 3; i++) health = afterFailure(health, `flash failed ${i}\nlong tail`, 3, 1000 + i);
    const first = new SqliteBenchStore(file);
    await first.boardHealth.put('stm32f4-discovery', health);
    await first.close();

    const second = new SqliteBenchStore(file);
    const reopened = second.boardHealth;
    expect(await reopened.get('stm32f4-discovery')).toEqual({
      consecutiveFailures: 3,
      lastFailure: 'flash failed 2',
      quarantine: { sinceMs: 1002, reason: 'quarantined after 3 consecutive infrastructure failures: flash failed 2' },
    });
    await reopened.put('stm32f4-discovery', afterSuccess());
    expect(await reopened.get('stm32f4-discovery')).toEqual(healthyBoard);
    await second.close();
  });

  it('refuses a negative or fractional failure count and stores nothing', async () => {
    const store = new SqliteBenchStore(':memory:').boardHealth;
    await expect(store.put('pico', { ...healthyBoard, consecutiveFailures: -1 })).rejects.toThrow(/non-negative integer, got -1/);
    await expect(store.put('pico', { ...healthyBoard, consecutiveFailures: 1.5 })).rejects.toThrow(/non-negative integer/);
    expect(await store.get('pico')).toEqual(healthyBoard);
  });

  it('answers exactly like the in-memory store for any sequence of puts (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('pico', 'uno', 'f4'), healthArb), { maxLength: 20 }), async (puts) => {
        const sqlite = new SqliteBenchStore(':memory:').boardHealth;
        const memory = new InMemoryQuarantineStore();
        for (const [board, health] of puts) {
          await sqlite.put(board, health);
          await memory.put(board, health);
        }
        for (const board of ['pico', 'uno', 'f4', 'never-seen']) expect(await sqlite.get(board)).toEqual(await memory.get(board));
      }),
      { numRuns: 50 },
    );
  });
});
