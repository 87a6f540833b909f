import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { startInProcessTarget } from '../../bin/run-command.js';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { loadScenario } from '../../harness/scenario/load-scenario.js';
import { scenariosDir } from './scenario-test-helper.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

// The real entry point, compiled as users run it: exit codes come from bin/hilbench.ts's process.exit.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hilbench run and record (CLI)', () => {
  it('run: exit 0 on a passing file, 2 on an invalid one, with a JUnit report', async () => {
    const junit = path.join(dir, 'junit.xml');
    const ok = await execa('node', [cli, 'run', path.join(scenariosDir, 'device-hello.yaml'), '--junit', junit], { reject: false });
    expect(ok.exitCode, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^PASSED +.*device-hello\.yaml/m);
    expect(readFileSync(junit, 'utf8')).toMatch(/<testsuites name="hilbench scenarios" tests="\d+" failures="0" errors="0" skipped="0" time="[\d.]+">/);
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, 'version: 1\nname: bad\nsteps:\n  - wait-serial: { txt: a }\n');
    const invalid = await execa('node', [cli, 'run', bad], { reject: false });
    const usage = await execa('node', [cli, 'run', bad, '--timeout', 'soon'], { reject: false });
    expect(usage.exitCode).toBe(2);
    expect(invalid.exitCode).toBe(2);
    expect(invalid.stderr).toContain('steps[0].wait-serial'); // diagnostics on stderr, progress on stdout
  });

  it('run: --timeout and --time-limit take the files\' duration forms, and --time-limit stops an overlong scenario (exit 42)', async () => {
    const file = path.join(scenariosDir, 'device-hello.yaml');
    const hour = await execa('node', [cli, 'run', file, '--timeout', '1h', '--time-limit', '1h'], { reject: false });
    expect(hour.exitCode, hour.stdout + hour.stderr).toBe(0);
    // A wall-clock delay of 2 s under a 100 ms limit: the run must stop as a timeout.
    const slow = path.join(dir, 'slow.yaml');
    writeFileSync(slow, 'version: 1\nname: slow\nsteps:\n  - delay: { duration: 2s, clock: wall }\n');
    const tooShort = await execa('node', [cli, 'run', slow, '--time-limit', '100ms'], { reject: false });
    expect(tooShort.exitCode, tooShort.stdout + tooShort.stderr).toBe(42);
    expect(tooShort.stderr).toMatch(/time limit of 100 ms/);
  });

  it('record: proxies until SIGINT, then writes a scenario that loads', async () => {
    const { target, close } = await startInProcessTarget({ backend: 'mock' });
    try {
      const out = path.join(dir, 'recorded/session.yaml');
      const child = execa('node', [cli, 'record', '--target', target.benchUrl as string, '--out', out, '--port', '0', '--name', 'from the CLI'], { reject: false });
      const url = await new Promise<string>((resolve, reject) => {
        let seen = '';
        child.stdout?.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const m = /point the agent at (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
          if (m) resolve(m[1] as string);
        });
        void child.then((r) => reject(new Error(`record exited early: ${r.exitCode} ${r.stderr}`)));
      });
      const bench = new BenchClient({ baseUrl: url });
      const agent = await bench.register('cli-agent');
      const session = await bench.withToken(agent.token).openSession('pico', { heartbeat: false });
      await session.end();
      child.kill('SIGINT');
      const result = await child;
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toContain(`wrote ${out}: 3 requests recorded`);
      const scenario = loadScenario(out);
      expect(scenario.name).toBe('from the CLI');
      expect(scenario.steps.map((s) => s.kind)).toEqual(['register', 'open-session', 'end-session']);
      expect(readFileSync(out, 'utf8')).not.toContain(agent.token);
    } finally {
      await close();
    }
  });
});
