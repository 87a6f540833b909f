import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand, startInProcessTarget } from '../../bin/run-command.js';
import { loadScenario, parseScenario } from '../../harness/scenario/load-scenario.js';
import { describeFailure, runScenario } from '../../harness/scenario/run-scenario.js';
import { remoteTarget } from '../../harness/scenario/scenario-target.js';
import { scenariosDir } from './scenario-test-helper.js';

// A non-default backend with the default board (pico): the bench lists pico offline. That is a
// target that cannot run the file (UNSUPPORTED, exit 2) before any step, not a failure halfway.
describe('bench boards are checked before the first step', () => {
  it('a board offline on the bench (backend qemu, board pico) is unsupported, naming --var board', { timeout: 30_000 }, async () => {
    const { target, close } = await startInProcessTarget({ backend: 'qemu' });
    try {
      const r = await runScenario(loadScenario(path.join(scenariosDir, 'bench-session-happy-path.yaml')), target);
      expect(r.status, describeFailure(r)).toBe('unsupported');
      expect(r.steps.every((s) => s.status === 'not-run')).toBe(true);
      expect(r.failure?.message).toMatch(/board pico is offline on the bench \(backend qemu.*--var board=/s);
      const unknown = await runScenario(loadScenario(path.join(scenariosDir, 'bench-session-happy-path.yaml')), target, { vars: { board: 'no-such-board' } });
      expect(unknown.status).toBe('unsupported');
      expect(unknown.failure?.message).toMatch(/the bench has no board no-such-board/);
    } finally {
      await close();
    }
  });

  it('hilbench run --backend qemu on the default board exits 2', { timeout: 30_000 }, async () => {
    const lines: string[] = [];
    const code = await runCommand({ files: [path.join(scenariosDir, 'bench-busy-board.yaml')], backend: 'qemu', print: (l) => lines.push(l) });
    expect(code, lines.join('\n')).toBe(2);
    expect(lines.join('\n')).toMatch(/^UNSUPPORTED /m);
  });

  it('steps expecting a refusal may name an unknown board (bench-bad-firmware still passes)', { timeout: 30_000 }, async () => {
    const { target, close } = await startInProcessTarget({ backend: 'mock' });
    try {
      const r = await runScenario(loadScenario(path.join(scenariosDir, 'bench-bad-firmware.yaml')), target);
      expect(r.status, describeFailure(r)).toBe('passed');
    } finally {
      await close();
    }
  });

  it('without a device backend the message says how to get one', async () => {
    const r = await runScenario(parseScenario('version: 1\nname: d\nboard: pico\nsteps:\n  - device-flash: { firmware: ../firmware/examples/pico/hello.elf }\n', path.join(scenariosDir, 'd.yaml')), remoteTarget({ benchUrl: 'http://127.0.0.1:9', boards: [] }));
    expect(r.status).toBe('unsupported');
    expect(r.failure?.message).toMatch(/needs a device backend, and bench http:\/\/127\.0\.0\.1:9 has none available \(mock, sim, qemu or renode with --backend; probe also needs --bench-file\)/);
  });
});
