/**
 * `npm test`: the type check, lint and every test, started together so that they share the cores
 * (on CI's two, run one after another they took about 105 s more; decision 0750). The tests'
 * output streams as it comes; the type check's and lint's is kept and printed after it, so the
 * two never interleave. Exits 1 if any of the three fails, naming which. Arguments go to vitest
 * (`npm test -- --maxWorkers=1`).
 */
import { spawn } from 'node:child_process';

interface Check {
  name: string;
  args: string[];
  /** Streamed as it comes, or kept for the end. */
  live: boolean;
}

const checks: Check[] = [
  { name: 'tests (vitest run)', args: ['run', 'test:unit', '--', ...process.argv.slice(2)], live: true },
  { name: 'type check (tsc --noEmit)', args: ['run', 'typecheck'], live: false },
  { name: 'lint (eslint .)', args: ['run', 'lint'], live: false },
];

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const children = new Set<ReturnType<typeof spawn>>();

function run(check: Check): Promise<{ check: Check; code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(npm, check.args, { stdio: check.live ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.on('error', (err) => {
      children.delete(child);
      resolve({ check, code: 1, output: `${output}could not start npm: ${err.message}\n` });
    });
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({ check, code: code ?? (signal ? 1 : 0), output });
    });
  });
}

// Ctrl-C reaches the children through the terminal's process group; a plain SIGTERM does not.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

const results = await Promise.all(checks.map(run));
for (const { check, output } of results) {
  if (check.live) continue;
  console.log(`\n--- ${check.name} (ran beside the tests) ---`);
  process.stdout.write(output.trim() === '' ? 'no findings\n' : output);
}
const failed = results.filter((r) => r.code !== 0).map((r) => r.check.name);
console.log(failed.length === 0 ? '\nevery check passed' : `\nfailed: ${failed.join(', ')}`);
process.exitCode = failed.length === 0 ? 0 : 1;
