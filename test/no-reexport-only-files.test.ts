import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * No file only passes on what other files export (issue 29): a reader who opens one to find a
 * function finds a list of other files instead, and a barrel hides which module a caller needs.
 * Importers import the module that defines the name.
 */
const root = path.resolve(import.meta.dirname, '..');

/** Files that must re-export: the package's entry points, which package.json's `exports` names. */
const entryPoints = new Set(['lib/index.ts']);

/** Whether every statement of `file` is an import or an export of other files' names. */
function onlyReexports(file: string): boolean {
  const text = readFileSync(path.join(root, file), 'utf8');
  // Most files export a declaration of their own; only those with an `export {` or `export *` need parsing.
  if (!/^export (?:type )?[{*]/m.test(text)) return false;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const statements = source.statements;
  return (
    statements.some((s) => ts.isExportDeclaration(s)) &&
    statements.every((s) => ts.isImportDeclaration(s) || ts.isExportDeclaration(s))
  );
}

describe('re-export-only files', () => {
  it('there are none but the package entry points', () => {
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '*.ts'], { cwd: root, encoding: 'utf8' })
      .split('\0')
      .filter((f) => f !== '' && !f.startsWith('node_modules/') && !f.endsWith('.d.ts'));
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((f) => !entryPoints.has(f) && onlyReexports(f))).toEqual([]);
  });

  it('package.json exports each entry point', () => {
    const exported = JSON.stringify((JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { exports: unknown }).exports);
    expect(exported).toContain('./dist/lib/index.js');
  });
});
