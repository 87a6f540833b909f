import { RelayStore } from '../../server/relay/relay-store.js';
import { createTestDatabase } from './postgres-test-database.js';
import { tempDataDir } from './relay-test-kit.js';

/** A relay store opened for one test, and how to be rid of it: closed, its data dir or database removed. */
export interface OpenedRelayStore {
  store: RelayStore;
  dispose: () => Promise<void>;
}

/** The embedded default: relay.sqlite in a fresh data dir, deleted by `dispose`. */
export async function openSqliteRelayStore(): Promise<OpenedRelayStore> {
  const data = tempDataDir('hilbench-relay-store-');
  const store = new RelayStore(data.dir);
  return {
    store,
    dispose: async () => {
      await store.close();
      data.remove();
    },
  };
}

/**
 * On a fresh PostgreSQL database copied with the relay's tables already migrated, or on `database`
 * (one a test prepared before the relay migrates it); the database is dropped by `dispose`.
 */
export async function openPostgresRelayStore(options: { database?: { url: string; drop: () => Promise<void> } } = {}): Promise<OpenedRelayStore> {
  const database = options.database ?? (await createTestDatabase({ migrated: 'relay' }));
  try {
    const store = await RelayStore.openPostgres(database.url);
    return {
      store,
      dispose: async () => {
        await store.close();
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop();
    throw err;
  }
}
