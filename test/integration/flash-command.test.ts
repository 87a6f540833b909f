import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { startBenchTestApp } from '../support/bench-test-app.js';

/** `hilbench flash` (issue 11): serial output live on stdout, a verdict, Wokwi's exit codes, reports. */
const root = path.resolve(import.meta.dirname, '../..');
const cli = path.join(root, 'bin/hilbench.js');
const hello = path.join(root, 'scenarios/firmware/pico/hello.elf');
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-flash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const flash = (...args: string[]) => execa('node', [cli, 'flash', hello, '--board', 'pico', ...args], { reject: false });

describe('hilbench flash in process (sim)', () => {
  it('exits 0 when the expected text appears, 1 on the fail text, 42 when the capture ends without it', async () => {
    const passed = await flash('--backend', 'sim', '--expect-text', 'tick 2');
    expect(passed.exitCode).toBe(0);
    expect(passed.stdout).toMatch(/^hilbench hello board=pico\r\ntick 1\r\ntick 2/);
    expect(passed.stderr).toContain('hilbench flash: passed: the firmware printed "tick 2"');
    expect((await flash('--backend', 'sim', '--fail-text', 'tick 1')).exitCode).toBe(1);
    const timedOut = await flash('--backend', 'sim', '--expect-regex', 'tick \\d{3}', '--timeout', '0.5');
    expect(timedOut.exitCode).toBe(42);
    expect(timedOut.stderr).toContain('did not appear within 0.5 s of device time');
  });

  it('writes the serial log and a JUnit case with the output and the failure', async () => {
    const log = path.join(dir, 'serial.log');
    const junit = path.join(dir, 'junit.xml');
    const res = await flash('--backend', 'sim', '--expect-text', 'never printed', '--timeout', '0.3', '--serial-log-file', log, '--junit', junit);
    expect(res.exitCode).toBe(42);
    expect(readFileSync(log, 'utf8')).toMatch(/^hilbench hello board=pico\r\ntick 1\r\n/);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toContain('<testcase classname="hilbench flash" name="pico hello.elf"');
    expect(xml).toContain('<failure type="timeout"');
    expect(xml).toMatch(/<system-out>hilbench hello board=pico\r\ntick 1/);
  });

  it('fails with the reason for an unknown board', async () => {
    const res = await flash('--backend', 'sim', '--board', 'no-such-board');
    expect(res.exitCode).not.toBe(0);
    expect(res.stderr).toContain('board "no-such-board" is not in the catalog');
  });
});

describe('usage errors', () => {
  it('print the one-line error and where to look, not the whole help', async () => {
    const res = await execa('node', [cli, 'flash', hello], { reject: false });
    expect(res.exitCode).not.toBe(0);
    expect(res.stderr).toContain("error: required option '--board <id>' not specified");
    expect(res.stderr).toContain('(see hilbench <command> --help)');
    expect(res.stderr).not.toContain('Usage:');
  });
});

describe('hilbench flash against a bench server', () => {
  it('prints the job’s UART from the live stream and exits 0 on the expected text', async () => {
    const app = await startBenchTestApp();
    try {
      const { token } = await app.register('ci');
      const res = await flash('--server', app.url, '--token', token, '--expect-text', 'hilbench-mock: reset pico');
      expect(res.stderr).toContain('hilbench flash: passed');
      expect(res.exitCode).toBe(0);
      expect(res.stdout).toContain('hilbench-mock: reset pico');
      const refused = await flash('--server', app.url, '--token', 'hb_wrong');
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toMatch(/the server refused the job \(401\)/);
    } finally {
      await app.close();
    }
  });
});
