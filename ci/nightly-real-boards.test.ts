import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';

/**
 * ci/nightly-real-boards.yml is valid YAML of the GitHub Actions shape we rely on; every step
 * that pipes runs under `shell: bash` (`bash -eo pipefail`: GitHub's default `bash -e` lets a
 * failing command piped into `tee` pass); and the hilbench options it uses exist.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

// A step has `uses` or `run`; `name` is optional (checkout and setup-node have none here).
const stepSchema = z.object({ name: z.string().optional(), run: z.string().optional(), shell: z.string().optional(), uses: z.string().optional() }).passthrough();
const workflowSchema = z
  .object({
    name: z.string(),
    on: z.record(z.string(), z.unknown()),
    defaults: z.object({ run: z.object({ shell: z.string().optional() }) }).optional(),
    jobs: z.record(
      z.string(),
      z.object({ 'runs-on': z.unknown(), defaults: z.object({ run: z.object({ shell: z.string().optional() }) }).optional(), steps: z.array(stepSchema).min(1) }).passthrough(),
    ),
  })
  .passthrough();

const workflow = workflowSchema.parse(parseYaml(readFileSync(path.join(here, 'nightly-real-boards.yml'), 'utf8')));
const steps = Object.values(workflow.jobs).flatMap((job) =>
  job.steps.map((step, i) => ({ ...step, name: step.name ?? step.uses ?? `step ${i}`, effectiveShell: step.shell ?? job.defaults?.run.shell ?? workflow.defaults?.run.shell })),
);

/** A `|` that is a pipe: not `||`, not inside quotes. */
function hasPipe(script: string): boolean {
  return script.split('\n').some((line) => /\|/.test(line.replace(/'[^']*'|"[^"]*"/g, '').replace(/\|\|/g, '')));
}

describe('ci/nightly-real-boards.yml', () => {
  it('finds pipes', () => {
    expect(hasPipe('a | tee b')).toBe(true);
    expect(hasPipe('a || true')).toBe(false);
    expect(hasPipe("echo 'x|y'")).toBe(false);
  });

  it('runs every step with a pipe under shell: bash (pipefail)', () => {
    const piped = steps.filter((s) => s.run !== undefined && hasPipe(s.run));
    expect(piped.map((s) => s.name)).toEqual(expect.arrayContaining(['Check the bench', 'Scenario files on the real boards']));
    for (const step of piped) expect({ step: step.name, shell: step.effectiveShell }).toEqual({ step: step.name, shell: 'bash' });
  });

  it('uses only hilbench options that exist', { timeout: 60_000 }, async () => {
    const commands = steps.flatMap((s) => (s.run ?? '').split('\n')).filter((l) => /npx hilbench /.test(l));
    expect(commands.length).toBeGreaterThanOrEqual(2);
    for (const line of commands) {
      const [, sub, rest] = /npx hilbench (\w+)(.*)/.exec(line)!;
      const help = await execa('node', [path.join(root, 'bin/hilbench.js'), sub!, '--help'], { reject: false, cwd: root });
      for (const option of rest!.match(/--[a-z][a-z-]*/g) ?? []) expect(help.stdout, `${sub} ${option}`).toContain(option);
    }
  });

  it('names test files that exist', () => {
    for (const file of steps.flatMap((s) => (s.run ?? '').match(/test\/[\w/.-]+\.test\.ts/g) ?? [])) {
      expect(() => readFileSync(path.join(root, file))).not.toThrow();
    }
  });
});
