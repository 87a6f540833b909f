import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startInProcessTarget } from '../../bin/run-command.js';
import type { Clock } from '../../core/clock.js';
import type { BackendChoice } from '../../harness/board-resolution.js';
import { parseScenario } from '../../harness/scenario/load-scenario.js';
import { describeFailure, runScenario, type ScenarioResult } from '../../harness/scenario/run-scenario.js';
import { scenariosDir } from './scenario-test-helper.js';

/** A real clock that records every real-time wait the runner asks for, and ends each at once. */
function recordingClock(): { clock: Clock; waitsMs: number[] } {
  const waitsMs: number[] = [];
  return {
    waitsMs,
    clock: {
      nowMs: () => Date.now(),
      setTimeout: (fn, delayMs) => {
        waitsMs.push(delayMs);
        return setTimeout(fn, 0);
      },
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    },
  };
}

async function runInProcess(backend: BackendChoice, yaml: string): Promise<{ result: ScenarioResult; waitsMs: number[] }> {
  const { target, close } = await startInProcessTarget({ backend });
  const rec = recordingClock();
  try {
    const result = await runScenario(parseScenario(yaml, path.join(scenariosDir, 'yield.yaml')), { ...target, realClock: rec.clock }, { timeLimitMs: 60_000 });
    return { result, waitsMs: rec.waitsMs };
  } finally {
    await close();
  }
}

describe('simulated waits in process do not run at real-time speed', () => {
  it('a relay poll on the fake clock never waits in real time (2 min simulated, 2 400 polls; 2 real minutes before the fix)', { timeout: 60_000 }, async () => {
    const { result, waitsMs } = await runInProcess(
      'mock',
      [
        'version: 1',
        'name: never confirmed',
        'steps:',
        '  - create-node: { as: a }',
        '  - post-item: { node: a, kind: statement, title: "lonely ${run.id}", as: claim }',
        '  - expect-bulletin: { item: "${claim.id}", node: "${a.node_id}", state: confirmed, timeout: 2m, poll: 50ms }',
        '',
      ].join('\n'),
    );
    expect(result.status).toBe('timeout');
    expect(result.failure?.message).toMatch(/timed out after 120000 ms \(simulated clock\)/);
    expect(waitsMs).toEqual([]);
  });

  it('a job on mock is polled on the fake clock only', { timeout: 60_000 }, async () => {
    const { result, waitsMs } = await runInProcess('mock', job);
    expect(result.status, describeFailure(result)).toBe('passed');
    expect(waitsMs).toEqual([]);
  });

  it('a job on a real-time backend (sim) gets real time while it runs', { timeout: 60_000 }, async () => {
    const { result, waitsMs } = await runInProcess('sim', job);
    expect(result.status, describeFailure(result)).toBe('passed');
    expect(waitsMs.length).toBeGreaterThan(0);
    expect(waitsMs.every((ms) => ms <= 50)).toBe(true);
  });
});

const job = [
  'version: 1',
  'name: a job',
  'board: pico',
  'steps:',
  '  - register: { as: a }',
  '  - flash: { token: "${a.token}", firmware: ../firmware/examples/pico/hello.elf, uart-seconds: 0.5, as: job }',
  '  - wait-job: { token: "${a.token}", job: "${job.job_id}", poll: 10ms }',
  '',
].join('\n');
