import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { EM_AVR } from '../../core/elf.js';
import { makeElf } from '../../test/support/make-elf.js';
import { BenchFileError, loadBenchFile, parseBenchFile } from './bench-file.js';
import { ProbeBackend } from './probe-backend.js';

const catalog = loadBoardCatalog();
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An image the F4 can run from flash. */
const f4Elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(32).fill(1) }] });

/** Writes the bench file, and beside it `files` (relative path -> bytes). */
function writeBench(text: string, files: Record<string, Uint8Array> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-file-test-'));
  dirs.push(dir);
  const file = path.join(dir, 'bench.yaml');
  writeFileSync(file, text);
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), bytes);
  }
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
    const file = writeBench(`${minimal}    healthCheck: { elf: health/f4-hello.elf, expect: "hello from f4" }\n`, { 'health/f4-hello.elf': f4Elf });
    const bench = loadBenchFile(file);
    expect(bench.boards['stm32f4-discovery']!.healthCheck).toEqual({
      elf: path.join(path.dirname(file), 'health/f4-hello.elf'),
      expect: 'hello from f4',
      withinSeconds: 5,
      maxAutomaticChecks: 5,
    });
  });

  it('refuses a missing or unparsable health-check ELF at load, naming the file and field', () => {
    const missing = writeBench(`${minimal}    healthCheck: { elf: health/gone.elf, expect: hello }\n`);
    expect(() => loadBenchFile(missing)).toThrow(BenchFileError);
    expect(() => loadBenchFile(missing)).toThrow(
      new RegExp(`^${escape(missing)}: boards\\.stm32f4-discovery\\.healthCheck\\.elf: cannot read the health-check firmware ${escape(path.join(path.dirname(missing), 'health/gone.elf'))}`),
    );
    const garbage = writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello }\n`, { 'h.elf': new TextEncoder().encode('not an elf') });
    expect(() => loadBenchFile(garbage)).toThrow(/boards\.stm32f4-discovery\.healthCheck\.elf: .*h\.elf is not a usable firmware image/);
  });

  it('refuses a health-check ELF for another architecture, or one that does not load into flash, when the backend is built', () => {
    const avr = writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello }\n`, { 'h.elf': makeElf({ machine: EM_AVR, segments: [{ paddr: 0, data: new Uint8Array(8) }] }) });
    expect(() => new ProbeBackend({ bench: loadBenchFile(avr), clock: systemClock })).toThrow(
      /boards\.stm32f4-discovery\.healthCheck\.elf: .*h\.elf cannot run on stm32f4-discovery: /,
    );
    const ram = writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello }\n`, { 'h.elf': makeElf({ segments: [{ paddr: 0x2000_0000, data: new Uint8Array(8) }] }) });
    expect(() => new ProbeBackend({ bench: loadBenchFile(ram), clock: systemClock })).toThrow(/healthCheck\.elf: .*a probe programs flash only/);
    const good = writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello }\n`, { 'h.elf': f4Elf });
    expect(() => new ProbeBackend({ bench: loadBenchFile(good), clock: systemClock })).not.toThrow();
  });

  it('reads the automatic health-check settings and refuses nonsense ones', () => {
    const file = writeBench(`${minimal}    healthCheck: { elf: h.elf, expect: hello, retryAfterSeconds: 300, maxAutomaticChecks: 3 }\n`, { 'h.elf': f4Elf });
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
    // The examples' health-check ELFs live on a bench, not here: stand-ins that load into each board's flash.
    const raw = z.object({ boards: z.record(z.string(), z.object({ healthCheck: z.object({ elf: z.string() }).passthrough().optional() }).passthrough()) }).passthrough().parse(parseYaml(example!));
    const dir = mkdtempSync(path.join(tmpdir(), 'bench-file-example-'));
    dirs.push(dir);
    for (const [id, board] of Object.entries(raw.boards)) {
      if (!board.healthCheck) continue;
      const flash = catalog.find((b) => b.id === id)!.mcu.memory.find((r) => r.kind === 'flash')!;
      board.healthCheck.elf = path.join(dir, `${id}.elf`);
      writeFileSync(board.healthCheck.elf, makeElf({ segments: [{ paddr: flash.start, data: new Uint8Array(16) }] }));
    }
    const bench = parseBenchFile(raw, doc);
    expect(Object.keys(bench.boards).length).toBeGreaterThan(0);
    // Every board id is in the catalog and every probe has its target or chip.
    expect(() => new ProbeBackend({ bench, clock: systemClock })).not.toThrow();
  });

  it('parses already-loaded data with a source label (used by tests and the server)', () => {
    const bench = parseBenchFile({ version: 1, boards: {} }, '/etc/hilbench/bench.yaml');
    expect(bench).toMatchObject({ source: '/etc/hilbench/bench.yaml', boards: {}, quarantineAfterFailures: 3 });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('a pool of physical boards (decision 0550)', () => {
  const kit = (instance: string, sn: string, tty: string) => `
    - instance: ${instance}
      probe: { kind: openocd, serialNumber: "${sn}", interface: interface/stlink.cfg }
      serial: { path: /dev/serial/by-id/${tty} }`;

  it('reads a board given as a list of named instances, in order, the first also as the board', () => {
    const bench = loadBenchFile(writeBench(`version: 1\nboards:\n  stm32f4-discovery:${kit('left', 'SN-A', 'tty-a')}${kit('right', 'SN-B', 'tty-b')}\n`));
    expect(bench.pools['stm32f4-discovery']!.map((i) => [i.instance, i.probe.serialNumber])).toEqual([['left', 'SN-A'], ['right', 'SN-B']]);
    expect(bench.boards['stm32f4-discovery']!.probe.serialNumber).toBe('SN-A');
    const backend = new ProbeBackend({ bench, clock: systemClock, boards: catalog });
    expect(backend.instanceCount(catalog.find((b) => b.id === 'stm32f4-discovery')!)).toBe(2);
  });

  it('refuses two entries for one physical board, naming both, whatever boards they are under', () => {
    const cases: Array<[string, RegExp]> = [
      [
        `  stm32f4-discovery:${kit('left', 'SN-A', 'tty-a')}${kit('right', 'SN-A', 'tty-b')}\n`,
        /two entries for one physical board: boards\.stm32f4-discovery\.0 \(instance left\) and boards\.stm32f4-discovery\.1 \(instance right\) name the same probe \(serialNumber "SN-A"\); each physical board is one entry/,
      ],
      [
        `  stm32f4-discovery:${kit('left', 'SN-A', 'tty-a')}${kit('left', 'SN-B', 'tty-b')}\n`,
        /boards\.stm32f4-discovery\.0 \(instance left\) and boards\.stm32f4-discovery\.1 \(instance left\) name the same instance "left" of stm32f4-discovery/,
      ],
      [
        `  stm32f4-discovery:${kit('left', 'SN-A', 'tty-a')}\n  stm32vldiscovery:\n    probe: { kind: openocd, serialNumber: "SN-V", interface: interface/stlink.cfg }\n    serial: { path: /dev/serial/by-id/tty-a }\n`,
        /boards\.stm32vldiscovery and boards\.stm32f4-discovery\.0 \(instance left\) name the same serial device \(\/dev\/serial\/by-id\/tty-a\)|boards\.stm32f4-discovery\.0 \(instance left\) and boards\.stm32vldiscovery name the same serial device \(\/dev\/serial\/by-id\/tty-a\)/,
      ],
    ];
    for (const [boards, message] of cases) {
      const file = writeBench(`version: 1\nboards:\n${boards}`);
      expect(() => loadBenchFile(file), boards).toThrow(BenchFileError);
      expect(() => loadBenchFile(file), boards).toThrow(message);
    }
  });

  it('sees one device behind two serial paths (a by-id link and its tty) when it is there', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bench-file-tty-'));
    dirs.push(dir);
    const tty = path.join(dir, 'ttyACM0');
    writeFileSync(tty, '');
    symlinkSync(tty, path.join(dir, 'by-id-kit'));
    const raw = {
      version: 1,
      boards: {
        'stm32f4-discovery': { probe: { kind: 'openocd', serialNumber: 'SN-A', interface: 'interface/stlink.cfg' }, serial: { path: tty } },
        stm32vldiscovery: { probe: { kind: 'openocd', serialNumber: 'SN-B', interface: 'interface/stlink.cfg' }, serial: { path: path.join(dir, 'by-id-kit') } },
      },
    };
    expect(() => parseBenchFile(raw, 'bench.yaml')).toThrow(`name the same serial device (${path.join(dir, 'by-id-kit')}, i.e. ${tty})`);
  });

  it('checks each instance as it checks a board, naming it by its place in the list', () => {
    const file = writeBench(`version: 1\nboards:\n  stm32f4-discovery:\n    - instance: Left\n      probe: { kind: openocd, serialNumber: "SN-A", interface: interface/stlink.cfg }\n      serial: { path: relative/tty }\n`);
    expect(() => loadBenchFile(file)).toThrow(/boards\.stm32f4-discovery\.0\.serial\.path: must be an absolute path/);
    expect(() => loadBenchFile(file)).toThrow(/boards\.stm32f4-discovery\.0\.instance: instance names are lower-case kebab-case/);
    expect(() => loadBenchFile(writeBench(`version: 1\nboards:\n  stm32f4-discovery: []\n`))).toThrow(/boards\.stm32f4-discovery: Too small/);
  });
});
