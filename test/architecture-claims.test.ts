import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Two sentences of docs/architecture.md that a newcomer builds on and that drifted once (issue 29):
 * which packages `core/` depends on, and that one migration runner serves every database. Each is
 * checked against the code, so the sentence and the code change together.
 */
const root = path.resolve(import.meta.dirname, '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** Production TypeScript files under `folder` (tests left out), repo-relative. */
function sources(folder: string): string[] {
  return readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.test.ts'))
    .map((d) => path.relative(root, path.join(d.parentPath, d.name)).split(path.sep).join('/'));
}

/** The packages a file imports (not relative paths, not Node's built-ins). */
function packagesOf(file: string): string[] {
  return [...read(file).matchAll(/\bfrom\s+'([^'.][^']*)'|\bimport\s*\(\s*'([^'.][^']*)'/g)]
    .map((m) => (m[1] ?? m[2]) as string)
    .filter((spec) => !spec.startsWith('node:'))
    .map((spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string)));
}

describe("docs/architecture.md's claims", () => {
  it("names exactly the packages core/ imports, besides Node's built-ins", () => {
    const row = read('docs/architecture.md')
      .split('\n')
      .find((l) => l.startsWith('| `core/` |'));
    expect(row, 'docs/architecture.md has no `core/` row').toBeDefined();
    const { dependencies } = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const sentence = /Its only dependencies are ([^;|]*)/.exec(row as string)?.[1];
    expect(sentence, 'the `core/` row says "Its only dependencies are ..."').toBeDefined();
    const named = [...(sentence as string).matchAll(/`([@a-z0-9/._-]+)`/g)].map((m) => m[1] as string).filter((name) => name in dependencies);
    const imported = [...new Set(sources('core').flatMap(packagesOf))];
    expect(imported.length).toBeGreaterThan(0);
    expect(imported.sort()).toEqual([...new Set(named)].sort());
  });

  it('has one migration runner: only server/storage/run-migrations.ts reads or writes a schema version', () => {
    expect(read('docs/architecture.md')).toContain('`server/storage/run-migrations.ts`, one numbered-migration runner for every database');
    const versionTable = /\b(?:FROM|INTO|UPDATE|TABLE(?: IF NOT EXISTS)?)\s+[a-z_."]*schema_version\b|\buser_version\b/i;
    const production = ['core', 'wire', 'clients', 'boards', 'sim', 'backends', 'harness', 'server', 'lib', 'bin'].flatMap(sources);
    expect(read('server/storage/run-migrations.ts')).toContain("'schema_version'");
    expect(production.filter((file) => file !== 'server/storage/run-migrations.ts' && versionTable.test(read(file)))).toEqual([]);
    // Every list of migrations is run by it.
    const lists = production.filter((file) => /:\s*(?:readonly\s+)?Migration\[\]|Migration\[\]\s*=/.test(read(file)));
    expect(lists.length).toBeGreaterThan(1);
    for (const file of lists.filter((f) => f !== 'server/storage/run-migrations.ts')) expect(read(file), file).toMatch(/from '[./]+(?:db\/)?run-migrations\.js'/);
  });
});
