/**
 * Text rules shared by the bench's and the relay's wire: UTF-16 strings that have no UTF-8 form,
 * and lengths in code points. Kept outside core/relay so the bench's schemas need not load the
 * relay's core to check a string (decision 0615).
 */

/**
 * True when the string holds a lone UTF-16 surrogate (it has no UTF-8 encoding of its own). ES2024's
 * `isWellFormed`: native, and at once for a string V8 holds in one byte per character (a node id's
 * hex), where the regular expression scanned every character.
 */
export function hasLoneSurrogate(s: string): boolean {
  return !s.isWellFormed();
}

/** `s` with each lone UTF-16 surrogate replaced by U+FFFD (ES2024's `toWellFormed`), so it has a UTF-8 encoding. */
export function withLoneSurrogatesReplaced(s: string): string {
  return s.toWellFormed();
}

/** Length in Unicode code points, the unit of every relay length limit. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}
