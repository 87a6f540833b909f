import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteBenchStore } from '../../server/storage/bench/sqlite-bench-store.js';
import { describePoolLeaseModel } from './bench-pool-lease-model.js';

/** `count` SQLite stores on one fresh file (two: two connections writing it at once, as two processes would). */
async function storesOnOneFile(count: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-pool-model-'));
  const file = path.join(dir, 'bench.db');
  const stores = Array.from({ length: count }, () => new SqliteBenchStore(file));
  return {
    stores,
    close: async () => {
      for (const store of stores) await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describePoolLeaseModel('sqlite, one store', () => storesOnOneFile(1), { numRuns: 40 });
describePoolLeaseModel('sqlite, two stores on one file', () => storesOnOneFile(2), { numRuns: 40 });
