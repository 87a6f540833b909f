/**
 * Start-up of the installed CLI (issue 17): the compiled `dist/bin/hilbench.js` running
 * `--help` and `--version`, as ratios against `node -e 0` measured alternately in the same run.
 * Builds dist/ first.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchRow, nowMs, percentile } from './measure.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist/bin/hilbench.js');

function timeRun(args: string[]): number {
  const start = nowMs();
  const run = spawnSync(process.execPath, args, { cwd: root, stdio: 'ignore' });
  if (run.status !== 0) throw new Error(`node ${args.join(' ')} exited ${run.status}`);
  return nowMs() - start;
}

export async function runStartupBench(rounds = 15): Promise<BenchRow[]> {
  // Built now, so what is measured is what the sources say (a dist/ left from earlier may be stale).
  const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'ignore' });
  if (build.status !== 0 || !existsSync(cli)) throw new Error('npm run build failed');
  const base: number[] = [];
  const help: number[] = [];
  const version: number[] = [];
  timeRun(['-e', '0']);
  for (let i = 0; i < rounds; i++) {
    base.push(timeRun(['-e', '0']));
    help.push(timeRun([cli, '--help']));
    version.push(timeRun([cli, '--version']));
  }
  const baseMs = percentile(base, 50);
  return [
    { name: '`node -e 0`, p50', value: baseMs, unit: 'ms', note: `baseline, ${rounds} runs alternating with the two below` },
    { name: '`hilbench --help` (dist), p50', value: percentile(help, 50), unit: 'ms', note: 'whole process' },
    { name: '`hilbench --help` / `node -e 0`', value: percentile(help, 50) / baseMs, unit: 'ratio', note: 'goal: at most 3' },
    { name: '`hilbench --version` (dist), p50', value: percentile(version, 50), unit: 'ms', note: 'whole process' },
    { name: '`hilbench --version` / `node -e 0`', value: percentile(version, 50) / baseMs, unit: 'ratio', note: 'goal: at most 3' },
  ];
}
