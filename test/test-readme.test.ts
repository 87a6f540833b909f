import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * test/README.md says which kind of test lives where: every folder under test/ (two levels) must be
 * in it, and every helper in test/support is described there by its file name.
 */
const testDir = import.meta.dirname;

describe('test/README.md', () => {
  it('names every folder of test/ and of test/integration/', () => {
    const readme = readFileSync(path.join(testDir, 'README.md'), 'utf8');
    const folders = ['.', 'integration'].flatMap((parent) =>
      readdirSync(path.join(testDir, parent), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => path.posix.join('test', parent, d.name)),
    );
    expect(folders.length).toBeGreaterThan(5);
    expect(folders.filter((folder) => !readme.includes(`\`${folder}/\``))).toEqual([]);
  });

  it('names every folder that holds a test, however deep', () => {
    const readme = readFileSync(path.join(testDir, 'README.md'), 'utf8');
    const holding = readdirSync(testDir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile() && d.name.endsWith('.test.ts') && d.parentPath !== testDir)
      .map((d) => path.posix.join('test', path.relative(testDir, d.parentPath).split(path.sep).join('/')));
    expect(holding.length).toBeGreaterThan(5);
    expect([...new Set(holding)].filter((folder) => !readme.includes(`\`${folder}/\``))).toEqual([]);
  });

  it('describes every helper file of test/support', () => {
    const readme = readFileSync(path.join(testDir, 'README.md'), 'utf8');
    const helpers = readdirSync(path.join(testDir, 'support')).filter((name) => !name.endsWith('.test.ts'));
    expect(helpers.length).toBeGreaterThan(5);
    expect(helpers.filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
  });
});
