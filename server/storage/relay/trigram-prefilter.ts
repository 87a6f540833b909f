import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

/** Characters a trigram index needs in one literal run before it narrows anything. */
const TRIGRAM_CHARS = 3;

/**
 * The literal runs of a LIKE pattern escaped with `\` (the text between unescaped `%` and `_`);
 * undefined when the pattern ends in a lone escape, which SQLite's LIKE matches against nothing.
 */
export function literalRunsOf(likePattern: string): string[] | undefined {
  const runs: string[] = [];
  let run = '';
  for (let k = 0; k < likePattern.length; k++) {
    const c = likePattern[k]!;
    if (c === '\\') {
      if (k + 1 >= likePattern.length) return undefined;
      run += likePattern[++k];
    } else if (c === '%' || c === '_') {
      if (run !== '') runs.push(run);
      run = '';
    } else {
      run += c;
    }
  }
  if (run !== '') runs.push(run);
  return runs;
}

/**
 * An FTS5 MATCH expression (trigram tokenizer) that every row matching `likePattern` also
 * matches: each literal run of at least three characters as a phrase, all required. Undefined
 * when no run is that long (the trigram index cannot narrow: the caller scans) or when the
 * pattern holds NUL (SQLite's LIKE stops reading a pattern there; the index would not).
 * Folding case is safe: the tokenizer folds every character the way LIKE's ASCII folding does,
 * and more, so the index keeps a superset that the LIKE on the real column then narrows exactly.
 */
export function trigramMatchOf(likePattern: string): string | undefined {
  if (likePattern.includes('\0')) return undefined;
  const runs = (literalRunsOf(likePattern) ?? []).filter((run) => [...run].length >= TRIGRAM_CHARS);
  if (runs.length === 0) return undefined;
  return runs.map((run) => `"${run.replaceAll('"', '""')}"`).join(' AND ');
}

/** Which index answers the relay's text search on this store (decision 0505, 0506); `scan`: none. */
export type SearchIndex = 'fts5-trigram' | 'pg_trgm' | 'scan';

export function* searchIndexOf(q: RelaySql): Steps<SearchIndex> {
  if (q.dialect === 'sqlite') return 'fts5-trigram';
  // The migration creates the three indexes together or none of them.
  return (yield* q.value("SELECT 1 FROM pg_indexes WHERE schemaname = 'relay' AND indexname = 'items_title_trgm'")) !== undefined ? 'pg_trgm' : 'scan';
}
