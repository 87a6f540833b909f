import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The relay's and the storage's source files (tests left out): every statement the relay sends is in them. */
function sources(): { file: string; text: string }[] {
  return ['relay', 'storage'].flatMap((dir) =>
    (readdirSync(path.join(serverDir, dir), { recursive: true, encoding: 'utf8' }) as string[])
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
      .map((file) => ({ file: path.join(dir, file), text: readFileSync(path.join(serverDir, dir, file), 'utf8') })),
  );
}

describe('RelayCountRepository on SQLite', () => {
  it('may take a largest rowid for a count: no statement of the relay deletes, replaces or renumbers a node, item, vote or event', () => {
    // A row deleted or replaced (REPLACE deletes, then inserts with a new rowid) would leave the
    // largest rowid above the count for good; VACUUM may renumber rowids (decision 1100).
    const forbidden = [
      /\bDELETE\s+FROM\s+(nodes|items|votes|events)\b/i,
      /\b(INSERT\s+OR\s+)?REPLACE\s+INTO\s+(nodes|items|votes|events)\b/i,
      /\bTRUNCATE\b[^;'`]*\b(nodes|items|votes|events)\b/i,
      /\bUPDATE\s+(nodes|items|votes|events)\s+SET\b[^'`]*\b(rowid|seq)\s*=/i,
      /['"`]\s*VACUUM\b/i,
    ];
    const found = sources().flatMap(({ file, text }) => forbidden.filter((pattern) => pattern.test(text)).map((pattern) => `${file}: ${pattern.source}`));
    expect(found).toEqual([]);
    // The check reads real sources: the statements it looks between are there.
    expect(sources().some(({ text }) => /INSERT INTO votes \(/.test(text))).toBe(true);
  });
});
