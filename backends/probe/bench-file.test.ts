import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { systemClock } from '../../core/clock.js';
import { BenchFileError, loadBenchFile, parseBenchFile } from './bench-file.js';
import { ProbeBackend } from './probe-backend.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function writeBench(text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-file-test-'));
  dirs.push(dir);
  const file = path.join(dir, 'bench.yaml');
  writeFileSync(file, text);
  return file;
}

const minimal = `
version: 1
boards:
  stm32f4-discovery:
    probe: { kind: openocd, serialNumber: "066DFF495251", interface: interface/stlink.cfg }
    serial: { path: /dev/serial/by-id/usb-STMicroelectronics_STM32_STLink_066DFF495251-if02 }
`;

describe('loadBenchFile', () => {
  it('reads a minimal file and fills the documented defaults', () => {
    const bench = loadBenchFile(writeBench(minimal));
    expect(bench.quarantineAfterFailures).toBe(3);
    const board = bench.boards['stm32f4-discovery']!;
    expect(board.serial.baudRate).toBe(115200);
    expect(board.resetMethod).toBe('system');
    expect(board.timeouts).toEqual({ flashMs: 120_000, resetMs: 15_000, serialOpenMs: 5_000, killGraceMs: 2_000 });
    expect(board.probe).toMatchObject({ kind: 'openocd', serialNumber: '066DFF495251' });
  });

  it('resolves the health-check ELF against the bench file, not the working directory', () => {
    const file = writeBench(`${minimal}    healthCheck: { elf: health/f4-hello.elf, expect: "hello from f4" }\n`);
    const bench = loadBenchFile(file);
    expect(bench.boards['stm32f4-discovery']!.healthCheck).toEqual({
      elf: path.join(path.dirname(file), 'health/f4-hello.elf'),
      expect: 'hello from f4',
      withinSeconds: 5,
      maxAutomaticChecks: 5,
    });
  });

  it('reads the automatic health-check settings and refuses nonsense ones', () => {
    const file = writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello, retryAfterSeconds: 300, maxAutomaticChecks: 3 }\n`);
    expect(loadBenchFile(file).boards['stm32f4-discovery']!.healthCheck).toMatchObject({ retryAfterSeconds: 300, maxAutomaticChecks: 3 });
    expect(() => loadBenchFile(writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello, retryAfterSeconds: 0 }\n`))).toThrow(
      /boards\.stm32f4-discovery\.healthCheck\.retryAfterSeconds/,
    );
    expect(() => loadBenchFile(writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello, maxAutomaticChecks: 1.5 }\n`))).toThrow(
      /healthCheck\.maxAutomaticChecks/,
    );
  });

  it.each([
    ['a wrong baud rate type', minimal.replace('-if02 }', '-if02, baudRate: fast }'), /boards\.stm32f4-discovery\.serial\.baudRate/],
    ['a relative serial path', minimal.replace('/dev/serial/by-id/', 'ttyACM0-'), /serial\.path: must be an absolute path/],
    ['an unknown probe kind', minimal.replace('kind: openocd', 'kind: jlink'), /boards\.stm32f4-discovery\.probe/],
    ['an unknown key', minimal.replace('version: 1', 'version: 1\nboardz: {}'), /boardz/],
    ['a missing version', minimal.replace('version: 1', ''), /version/],
    [
      'probe-rs without VID:PID',
      minimal.replace('kind: openocd, serialNumber: "066DFF495251", interface: interface/stlink.cfg', 'kind: probe-rs, serialNumber: "E661", vidPid: "2e8a"'),
      /probe\.vidPid: expected "VID:PID"/,
    ],
    [
      'a hardware reset on probe-rs',
      minimal.replace('kind: openocd, serialNumber: "066DFF495251", interface: interface/stlink.cfg', 'kind: probe-rs, serialNumber: "E661", vidPid: "2e8a:000c"') +
        '    resetMethod: hardware\n',
      /resetMethod: hardware reset is OpenOCD-only/,
    ],
    ['an invalid health-check regex', `${minimal}    healthCheck: { elf: a.elf, expect: "(" }\n`, /healthCheck\.expect: is not a valid regular expression/],
  ])('refuses %s, naming the file and the field', (_what, text, message) => {
    const file = writeBench(text);
    const error = (() => {
      try {
        loadBenchFile(file);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(BenchFileError);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(message);
  });

  it('names the file when it is missing or not YAML', () => {
    expect(() => loadBenchFile('/nonexistent/bench.yaml')).toThrow(/\/nonexistent\/bench\.yaml: cannot read/);
    expect(() => loadBenchFile(writeBench('boards: [unclosed'))).toThrow(/bench\.yaml: not valid YAML/);
  });

  it.each([['docs/bench-file.md'], ['ci/README.md']])('accepts the example bench file in %s', (doc) => {
    const text = readFileSync(path.join(repoRoot, doc), 'utf8');
    const example = /```yaml\n([^]*?)```/.exec(text)?.[1];
    expect(example).toBeDefined();
    const bench = parseBenchFile(parseYaml(example!), doc);
    expect(Object.keys(bench.boards).length).toBeGreaterThan(0);
    // Every board id is in the catalog and every probe has its target or chip.
    expect(() => new ProbeBackend({ bench, clock: systemClock })).not.toThrow();
  });

  it('parses already-loaded data with a source label (used by tests and the server)', () => {
    const bench = parseBenchFile({ version: 1, boards: {} }, '/etc/hilbench/bench.yaml');
    expect(bench).toMatchObject({ source: '/etc/hilbench/bench.yaml', boards: {}, quarantineAfterFailures: 3 });
  });
});
