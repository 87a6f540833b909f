import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** docs/decisions/README.md indexes every decision: a newcomer finds them all from one page. */
const dir = path.resolve(import.meta.dirname, '../docs/decisions');

/** The index line of a decision file, from its title (`# NNNN: Title` or `# NNNN — Title`). */
function indexLine(file: string): string {
  const first = readFileSync(path.join(dir, file), 'utf8').split('\n')[0] ?? '';
  const match = /^# (\d{4})\s*(?::|—)\s*(.*)$/.exec(first);
  if (!match) throw new Error(`${file}: its first line should be "# NNNN: Title", not ${JSON.stringify(first)}`);
  return `| [${match[1]}](${file}) | ${match[2]} |`;
}

describe('docs/decisions/README.md', () => {
  const files = readdirSync(dir).filter((f) => /^\d{4}-.*\.md$/.test(f)).sort();
  const index = readFileSync(path.join(dir, 'README.md'), 'utf8');

  it('lists every decision with its title, in order', () => {
    expect(files.length).toBeGreaterThan(50);
    const missing = files.map(indexLine).filter((line) => !index.includes(line));
    expect(missing, 'add these lines to docs/decisions/README.md').toEqual([]);
    const listed = [...index.matchAll(/^\| \[\d{4}\]\(([^)]+)\) \|/gm)].map((m) => m[1]);
    expect(listed).toEqual(files);
  });

  it('gives every decision a number of its own', () => {
    const numbers = files.map((f) => f.slice(0, 4));
    expect(numbers.filter((n, i) => numbers.indexOf(n) !== i)).toEqual([]);
  });
});
