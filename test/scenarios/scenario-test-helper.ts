import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { BackendChoice } from '../../harness/board-resolution.js';
import { expandGlobs, startInProcessTarget } from '../../bin/run-command.js';
import { loadScenario } from '../../harness/scenario/load-scenario.js';
import { describeFailure, runScenario } from '../../harness/scenario/run-scenario.js';

/** The repository's scenarios/ folder. */
export const scenariosDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scenarios');

/**
 * Turns every scenario file matching `pattern` into a vitest test, replayed on a fresh in-process
 * bench and relay (fake clock) with `backend`. A scenario whose `backends` exclude this backend is
 * reported as skipped, not silently passed. `vars` override the files' variables (e.g. `board`). A failure shows the runner's whole report (file, step,
 * time, expected, actual, UART tail).
 */
export function describeScenarioFiles(options: { backend: BackendChoice; patterns?: string[]; vars?: Record<string, string>; timeoutMs?: number; skip?: string }): void {
  const files = expandGlobs(options.patterns ?? ['*.yaml'], scenariosDir);
  const title = `scenario files on ${options.backend}${options.vars ? ` (${Object.entries(options.vars).map(([k, v]) => `${k}=${v}`).join(', ')})` : ''}`;
  describe.skipIf(options.skip !== undefined)(options.skip ? `${title}: skipped, ${options.skip}` : title, () => {
    it('finds scenario files', () => {
      expect(files.length).toBeGreaterThan(0);
    });
    for (const file of files) {
      const scenario = loadScenario(file);
      const skip = scenario.backends !== undefined && options.backend !== 'auto' && !scenario.backends.includes(options.backend);
      it.skipIf(skip)(`${path.basename(file)}: ${scenario.name}`, { timeout: options.timeoutMs ?? 60_000 }, async () => {
        const { target, close } = await startInProcessTarget({ backend: options.backend });
        try {
          const result = await runScenario(scenario, target, { vars: options.vars ?? {} });
          expect(result.status, describeFailure(result)).toBe('passed');
          expect(result.steps.every((s) => s.status === 'passed')).toBe(true);
        } finally {
          await close();
        }
      });
    }
  });
}
