/** Shared helpers of the benchmark scripts: percentiles and markdown tables. */

export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  note: string;
}

/** The p-th percentile (0..100) by nearest rank of `samples` (copied, not mutated). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function formatValue(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 1) return value.toFixed(2);
  return value.toPrecision(3);
}

export function markdownTable(rows: readonly BenchRow[]): string {
  const lines = ['| measurement | value | unit | note |', '|---|---:|---|---|'];
  for (const r of rows) lines.push(`| ${r.name} | ${formatValue(r.value)} | ${r.unit} | ${r.note} |`);
  return lines.join('\n');
}

/** Host milliseconds, monotonic. Benchmarks measure the real machine, so this is the one place that reads it. */
export const nowMs = (): number => performance.now();

/**
 * CPU milliseconds this process has used (all its threads, user and system). On a loaded
 * machine wall time also counts the time the scheduler gave to other processes, and far more
 * often for code that enters the kernel (the sim backend yields to the event loop between
 * slices) than for a loop that never does; the RP2040 benchmarks time both sides with this.
 */
export const cpuMs = (): number => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
