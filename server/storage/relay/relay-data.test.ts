import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { numberedParameters } from './pg-relay-sql.js';

// The repositories themselves run in the relay store contract, on SQLite and PostgreSQL
// (test/contract/relay-store-contract.ts).

describe('the relay data-access layer', () => {
  it('is the only place in server/relay that prepares SQL', () => {
    // Decision 0312: route handlers and domain classes call repositories. Tests may use the database.
    const relayDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../relay');
    const offenders = readdirSync(relayDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .filter((f) => /\.prepare\(|\.exec\(`|\bdb\.exec\(/.test(readFileSync(path.join(relayDir, f), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('numbers the parameters of a statement for PostgreSQL, leaving quoted text alone', () => {
    expect(numberedParameters("SELECT a FROM t WHERE b = ? AND c LIKE ? ESCAPE '\\' AND d = '?' AND e IN (?)")).toBe(
      "SELECT a FROM t WHERE b = $1 AND c LIKE $2 ESCAPE '\\' AND d = '?' AND e IN ($3)",
    );
  });
});
