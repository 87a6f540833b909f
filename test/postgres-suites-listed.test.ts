import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postgresSuites } from './host-tool-suites.js';

/**
 * A test file that opens a PostgreSQL database must be in `postgresSuites.files`: where PostgreSQL
 * is missing those are left out with the install command, while an unlisted one fails with a
 * connection error a newcomer cannot read (two such files slipped in once). Checked by what the
 * files import, so a new one is caught without touching this test.
 */
const root = join(import.meta.dirname, '..');
const POSTGRES_MARKERS = ['postgres-test-database.js', 'relays-on-postgres.js', 'RelayStore.openPostgres', 'PostgresBenchStore', 'postgres-bench-stores.js', 'bench-store-dialects.js', 'openPostgresRelayStore'];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

describe('postgresSuites', () => {
  it('lists every test file that opens PostgreSQL, and nothing that does not exist', () => {
    const all = ['test', 'server', 'harness', 'core', 'wire', 'clients', 'bin', 'backends', 'sim', 'lib'].flatMap((dir) => testFiles(join(root, dir)));
    const needing = all.filter((file) => file !== 'test/postgres-suites-listed.test.ts' && POSTGRES_MARKERS.some((marker) => readFileSync(join(root, file), 'utf8').includes(marker)));
    expect(needing.length).toBeGreaterThan(5);
    expect(needing.filter((file) => !postgresSuites.files.includes(file))).toEqual([]);
    expect(postgresSuites.files.filter((file) => !all.includes(file))).toEqual([]);
  });
});
