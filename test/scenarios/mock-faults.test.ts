import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startInProcessTarget } from '../../bin/run-command.js';
import { parseScenario } from '../../harness/scenario/load-scenario.js';
import { describeFailure, runScenario } from '../../harness/scenario/run-scenario.js';
import { picoTestElf } from '../support/make-elf.js';

// Failed jobs through scenario steps: the mock's injected faults travel in the image
// (an ELF section `.hilbench.mock` holding `fault=<name>`, docs/backends/mock.md).
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-faults-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const withFault = (fault: string) => picoTestElf({ fault });
writeFileSync(path.join(dir, 'flash-fail.elf'), withFault('flash-fail'));
writeFileSync(path.join(dir, 'crash.elf'), withFault('crash'));

const scenarioText = `
version: 1
name: failed jobs
board: pico
steps:
  - register: { as: agent }
  - flash: { token: "\${agent.token}", firmware: flash-fail.elf, as: job }
  - name: the job fails with the tool's exit code and output
    wait-job:
      token: \${agent.token}
      job: \${job.job_id}
      state: failed
      expect: { json: { failure: { kind: flash-failed, message: { $regex: "exit code 1; output: \\\\*\\\\* Programming Failed \\\\*\\\\*" } }, uart: null } }
  - name: the board is free again after a failed job
    http: { method: GET, path: /api/v1/boards, expect: { json: { boards: { $contains: { id: pico, status: free } } } } }
  - flash: { token: "\${agent.token}", firmware: crash.elf, uart-seconds: 1, as: crash }
  - name: a crash is a finished job whose stop says crashed
    wait-job: { token: "\${agent.token}", job: "\${crash.job_id}", expect: { json: { state: done, stop: { reason: crashed } } } }
`;

describe('failed jobs in scenarios (mock faults)', () => {
  it('wait-job state: failed passes on a failing job, and state: done fails on it', async () => {
    const file = path.join(dir, 'failed-jobs.yaml');
    writeFileSync(file, scenarioText);
    const { target, close } = await startInProcessTarget({ backend: 'mock' });
    try {
      const ok = await runScenario(parseScenario(scenarioText, file), target);
      expect(ok.status, describeFailure(ok)).toBe('passed');
      const wrong = await runScenario(parseScenario(scenarioText.replace('state: failed', 'state: done'), file), target);
      expect(wrong.status).toBe('failed');
      expect(wrong.failure).toMatchObject({ step: { index: 2, kind: 'wait-job' }, expected: 'state done', actual: expect.stringMatching(/^state failed, failure \{"kind":"flash-failed"/) });
    } finally {
      await close();
    }
  });
});
