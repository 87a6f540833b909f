/** Levenshtein edit distance between `a` and `b` (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The names closest to `given` that a person could have meant: within a third of the longer
 * name's length in edits (at least one), or `given` a prefix of them; nearest first, at most `limit`.
 */
export function closestNames(given: string, names: readonly string[], limit = 3): string[] {
  const wanted = given.toLowerCase();
  return names
    .map((name) => {
      const candidate = name.toLowerCase();
      const distance = candidate.startsWith(wanted) && wanted.length >= 3 ? 0.5 : editDistance(wanted, candidate);
      return { name, distance, allowed: Math.max(1, Math.floor(Math.max(wanted.length, candidate.length) / 3)) };
    })
    .filter((c) => c.distance <= c.allowed)
    .sort((x, y) => x.distance - y.distance || x.name.localeCompare(y.name))
    .slice(0, limit)
    .map((c) => c.name);
}
