import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backendPathsFromEnv, expandGlobs, runCommand, startInProcessTarget } from '../../bin/run-command.js';
import { scenariosDir } from './scenario-test-helper.js';

const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(path.join(dir, 'firmware'));
copyFileSync(path.join(scenariosDir, '../firmware/examples/pico/hello.elf'), path.join(dir, 'firmware/hello.elf'));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

async function run(files: string[], extra: Partial<Parameters<typeof runCommand>[0]> = {}) {
  const lines: string[] = [];
  const code = await runCommand({ files, backend: 'mock', print: (l) => lines.push(l), ...extra });
  return { code, out: lines.join('\n') };
}

describe('hilbench run', () => {
  it('0 when every scenario passes; JUnit and JSON reports written', async () => {
    const ok = file('ok.yaml', 'version: 1\nname: ok\nboard: pico\nsteps:\n  - register: { as: a }\n  - open-session: { token: "${a.token}", expect: { status: 200 } }\n');
    const junit = path.join(dir, 'reports/junit.xml');
    const json = path.join(dir, 'reports/report.json');
    const { code, out } = await run([ok], { junit, json });
    expect(code).toBe(0);
    expect(out).toMatch(/^PASSED +.*ok\.yaml: ok \(2\/2 steps/m);
    expect(readFileSync(junit, 'utf8')).toContain('tests="1" failures="0" errors="0" skipped="0"');
    expect(JSON.parse(readFileSync(json, 'utf8'))).toMatchObject({ version: 1, exit_code: 0, totals: { passed: 1 }, scenarios: [{ name: 'ok', status: 'passed' }] });
  });

  it('prints a line per step as it ends, serial output live with verbose, and a serial log per scenario', async () => {
    const device = file('device.yaml', 'version: 1\nname: device\nboard: pico\nsteps:\n  - device-flash: { firmware: firmware/hello.elf }\n  - name: first tick\n    wait-serial: tick 2\n');
    const serial: string[] = [];
    const logs = path.join(dir, 'serial-logs');
    const junit = path.join(dir, 'reports/device-junit.xml');
    const { code, out } = await run([device], { verbose: true, writeSerial: (t) => serial.push(t), serialLogDir: logs, junit });
    expect(code).toBe(0);
    expect(out).toMatch(/device\.yaml: device\n {2}passed {2}steps\[0\] device-flash \d+ ms\n {2}passed {2}steps\[1\] wait-serial \("first tick"\) \d+ ms\nPASSED/);
    expect(serial.join('')).toContain('hilbench-mock: tick 2');
    const log = readFileSync(path.join(logs, 'device.log'), 'utf8');
    expect(log).toMatch(/^--- device pico ---\nhilbench-mock: reset pico\r\n/);
    expect(log).toContain('hilbench-mock: tick 2');
    expect(readFileSync(junit, 'utf8')).toMatch(/<testcase classname="[^"]*device\.yaml" name="device" time="[\d.]+"><system-out>--- device pico ---/);
  });

  it('1 when a step fails; the output names file, step, expected and actual', async () => {
    const bad = file('bad.yaml', 'version: 1\nname: bad\nboard: pico\nsteps:\n  - register: { as: a }\n  - name: wrong status\n    open-session: { token: "${a.token}", expect: { status: 409 } }\n');
    const { code, out } = await run([bad]);
    expect(code).toBe(1);
    expect(out).toContain('bad.yaml: bad: FAILED at steps[1] open-session ("wrong status")');
    expect(out).toMatch(/expected: status 409\n {2}actual: {3}200: \{"session_id":/);
    expect(out).toMatch(/at: {7}2026-01-01T00:00:00\.000Z \(\+0 ms simulated host time\)/);
  });

  it('42 when only waits timed out, measured on the fake clock', async () => {
    const slow = file(
      'slow.yaml',
      'version: 1\nname: slow\nboard: pico\nsteps:\n  - register: { as: a }\n  - open-session: { token: "${a.token}", as: s }\n  - expect-bulletin: { item: "0000000000000000000000000000000000000000000000000000000000000000", node: x, state: confirmed, timeout: 10m, poll: 30s }\n',
    );
    const { code, out } = await run([slow]);
    expect(code).toBe(42);
    expect(out).toMatch(/TIMEOUT at steps\[2\] expect-bulletin/);
    expect(out).toMatch(/timed out after 600000 ms \(simulated clock\)/);
    expect(out).toMatch(/\(\+600000 ms simulated host time\)/);
  });

  it('2 for an invalid file, and nothing of it runs; other files still run', async () => {
    const invalid = file('invalid.yaml', 'version: 1\nname: invalid\nsteps:\n  - wait-serial: { text: a, timeout: soon }\n');
    const ok = file('ok2.yaml', 'version: 1\nname: ok2\nsteps:\n  - register: {}\n');
    const { code, out } = await run([invalid, ok]);
    expect(code).toBe(2);
    expect(out).toMatch(/^INVALID +.*invalid\.yaml/m);
    expect(out).toContain('steps[0].wait-serial.timeout: expected a duration');
    expect(out).toMatch(/^PASSED +.*ok2\.yaml/m);
  });

  it('2 when no file matches', async () => {
    expect((await run([path.join(dir, 'none-*.yaml')])).code).toBe(2);
  });

  it('--bench-url / --relay-url: replays against remote services in real time', async () => {
    // A server "elsewhere": its clock is near the real one (relay documents must be within 300 s of it).
    const remote = await startInProcessTarget({ backend: 'mock', startMs: Date.now() });
    try {
      const json = path.join(dir, 'remote.json');
      const { code, out } = await run([path.join(scenariosDir, 'bench-busy-board.yaml'), path.join(scenariosDir, 'relay-vote-to-confirmation.yaml')], {
        benchUrl: remote.target.benchUrl as string,
        relayUrl: remote.target.relayUrl as string,
        json,
      });
      expect(code, out).toBe(0);
      const report = JSON.parse(readFileSync(json, 'utf8')) as { scenarios: Array<{ target: string; status: string }> };
      expect(report.scenarios.map((s) => s.status)).toEqual(['passed', 'passed']);
      expect(report.scenarios[0]?.target).toBe(`bench ${remote.target.benchUrl}, relay ${remote.target.relayUrl}`);
    } finally {
      await remote.close();
    }
  });

  it('a remote target without the relay refuses relay scenarios before their first step (exit 2)', async () => {
    const remote = await startInProcessTarget({ backend: 'mock', startMs: Date.now() });
    try {
      const { code, out } = await run([path.join(scenariosDir, 'relay-auth-failures.yaml')], { benchUrl: remote.target.benchUrl as string });
      expect(code).toBe(2);
      expect(out).toMatch(/^UNSUPPORTED .*relay-auth-failures\.yaml/m);
      expect(out).toContain('steps[1] create-node: needs a relay service');
    } finally {
      await remote.close();
    }
  });

  it('expands globs', () => {
    const found = expandGlobs([path.join(scenariosDir, 'bench-*.yaml')]).map((f) => path.basename(f));
    expect(found).toContain('bench-busy-board.yaml');
    expect(found.every((f) => f.startsWith('bench-') && f.endsWith('.yaml'))).toBe(true);
    expect(expandGlobs(['**/hello.elf'], path.join(scenariosDir, '../firmware/examples')).length).toBeGreaterThan(5);
    // A folder is every scenario file under it (not EISDIR), as vitest and pytest take folders.
    const folder = expandGlobs([scenariosDir]);
    expect(folder.map((f) => path.basename(f))).toEqual(expandGlobs(['*.yaml'], scenariosDir).map((f) => path.basename(f)));
    expect(folder.length).toBeGreaterThan(5);
  });
});

describe('backendPathsFromEnv', () => {
  it('turns HILBENCH_RP2040_BOOTROM and HILBENCH_RENODE into backend options (backends read no environment)', () => {
    expect(backendPathsFromEnv({ HILBENCH_RP2040_BOOTROM: '/roms/b1.bin', HILBENCH_RENODE: '/opt/renode/renode', PATH: '/bin' })).toEqual({
      rp2040BootromPath: '/roms/b1.bin',
      renodePath: '/opt/renode/renode',
    });
    expect(backendPathsFromEnv({ HILBENCH_RP2040_BOOTROM: '' })).toEqual({});
  });
});
