import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { FAKE_PROBES_ENV } from '../fakes/openocd/fake-board.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { makeElf } from '../support/make-elf.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

/**
 * Audit issue 4, item 1: `hilbench run --backend probe --bench-file <file>` (the nightly
 * workflow's scenario step) through the real entry point, with the stand-in openocd on PATH.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const fake = new FakeBench();
let benchYaml: string;
let scenario: string;
beforeAll(async () => {
  const bench: BenchFile = await fake.start([{ boardId: 'stm32f4-discovery', kind: 'openocd' }]);
  const { source: _source, pools: _pools, ...contents } = bench;
  benchYaml = path.join(fake.dir, 'bench.yaml');
  writeFileSync(benchYaml, stringify(contents));
  writeFileSync(path.join(fake.dir, 'hello.elf'), makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64).fill(7) }] }));
  scenario = path.join(fake.dir, 'probe-boot.yaml');
  writeFileSync(
    scenario,
    [
      'version: 1',
      'name: boot line on a real board',
      'board: stm32f4-discovery',
      'clock: wall',
      'timeout: 15s',
      'steps:',
      '  - device-flash: { firmware: hello.elf }',
      '  - wait-serial: { regex: "boot sha256=[0-9a-f]{16}" }',
      '',
    ].join('\n'),
  );
});
afterAll(() => fake.stop());

const toolsEnv = () => ({
  PATH: `${path.dirname(fakeOpenocdPath)}${path.delimiter}${path.dirname(fakeProbeRsPath)}${path.delimiter}${process.env.PATH ?? ''}`,
  [FAKE_PROBES_ENV]: fake.configPath,
});

describe('hilbench run --backend probe --bench-file', () => {
  it('replays a scenario on the probe backend against the stand-in tools', { timeout: 90_000 }, async () => {
    const result = await execa('node', [cli, 'run', '--backend', 'probe', '--bench-file', benchYaml, scenario], { reject: false, env: toolsEnv(), cwd: root });
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^PASSED +.*probe-boot\.yaml/m);
    expect(fake.invocations('stm32f4-discovery').some((line) => /program \{.*\.elf\} verify/.test(line))).toBe(true);
  });

  it('takes the bench file from HILBENCH_BENCH_FILE', { timeout: 90_000 }, async () => {
    const result = await execa('node', [cli, 'run', '--backend', 'probe', scenario], { reject: false, env: { ...toolsEnv(), HILBENCH_BENCH_FILE: benchYaml }, cwd: root });
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
  });

  it('a bad bench file, or none with --backend probe, is a usage error (exit 2) naming the problem', { timeout: 60_000 }, async () => {
    const bad = path.join(fake.dir, 'bad-bench.yaml');
    writeFileSync(bad, 'version: 2\nboards: {}\n');
    const invalid = await execa('node', [cli, 'run', '--backend', 'probe', '--bench-file', bad, scenario], { reject: false, env: toolsEnv(), cwd: root });
    expect(invalid.exitCode).toBe(2);
    expect(invalid.stderr).toContain(`${bad}: version`);
    const env = { ...toolsEnv() } as Record<string, string | undefined>;
    const missing = await execa('node', [cli, 'run', '--backend', 'probe', scenario], { reject: false, env: { ...env, HILBENCH_BENCH_FILE: undefined }, extendEnv: false, cwd: root });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain('--backend probe needs --bench-file');
  });
});
