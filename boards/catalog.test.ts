import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { elfMachineFor } from './board-schema.js';
import { BoardFileError, defaultBoardsDir, loadBoardCatalog } from './catalog.js';

const catalog = loadBoardCatalog();
const byId = new Map(catalog.map((b) => [b.id, b]));

/** The boards the project promises (issue 2); the catalog may grow beyond them. */
const promisedBoards = {
  pico: 'sim',
  uno: 'sim',
  'mps2-an385': 'qemu',
  'mps2-an386': 'qemu',
  'mps2-an500': 'qemu',
  'mps2-an505': 'qemu',
  lm3s6965evb: 'qemu',
  netduino2: 'qemu',
  netduinoplus2: 'qemu',
  stm32vldiscovery: 'qemu',
  microbit: 'qemu',
  'stm32f4-discovery': 'renode',
} as const;

describe('the shipped board catalog', () => {
  it('holds every promised board with the backend that runs it', () => {
    for (const [id, backend] of Object.entries(promisedBoards)) {
      const board = byId.get(id);
      expect(board, `board ${id}`).toBeDefined();
      expect(board!.backends[backend], `${id}.backends.${backend}`).toBeDefined();
    }
  });

  it('has one board per YAML file, ids equal to file names', () => {
    const files = readdirSync(defaultBoardsDir).filter((f) => f.endsWith('.yaml'));
    expect(catalog.map((b) => `${b.id}.yaml`).sort()).toEqual(files.sort());
  });

  it('uses every MCU file at least once', () => {
    const mcuFiles = readdirSync(path.join(defaultBoardsDir, 'mcus')).map((f) => f.replace(/\.yaml$/, ''));
    const used = new Set(catalog.map((b) => b.mcu.id));
    expect(mcuFiles.filter((m) => !used.has(m))).toEqual([]);
  });

  it.each(catalog.map((b) => [b.id, b] as const))('%s: regions do not overlap and fit in 32 bits', (_id, board) => {
    const regions = board.mcu.memory;
    for (const r of regions) expect(r.start + r.sizeBytes, r.name).toBeLessThanOrEqual(0x1_0000_0000);
    for (let i = 0; i < regions.length; i++) {
      for (let j = i + 1; j < regions.length; j++) {
        const a = regions[i]!;
        const b = regions[j]!;
        const disjoint = a.start + a.sizeBytes <= b.start || b.start + b.sizeBytes <= a.start;
        expect(disjoint, `${a.name} and ${b.name}`).toBe(true);
      }
    }
    // Something to run from and something to keep a stack in.
    expect(regions.some((r) => r.kind === 'ram')).toBe(true);
  });

  it.each(catalog.map((b) => [b.id, b] as const))('%s: runs somewhere, on a UART its MCU has', (_id, board) => {
    const { sim, qemu, renode, probe } = board.backends;
    expect([sim, qemu, renode, probe].some((k) => k !== undefined)).toBe(true);
    const uartNames = board.mcu.uarts.map((u) => u.name);
    if (sim) expect(uartNames).toContain(sim.uart);
    if (qemu?.uart !== undefined) expect(uartNames).toContain(qemu.uart);
    // Renode names peripherals by their path on the system bus, e.g. sysbus.usart2.
    if (renode) expect(uartNames).toContain(renode.uart.replace(/^sysbus\./, ''));
    if (sim) expect(sim.engine).toBe(board.mcu.architecture === 'avr' ? 'avr8js' : 'rp2040js');
    expect(elfMachineFor[board.mcu.architecture]).toBeGreaterThan(0);
  });

  it.each(catalog.map((b) => [b.id] as const))('%s: has example firmware (hello, exit, crash)', (id) => {
    // Read by path, not imported: boards/ sits below scenarios/ in the layer order.
    const dir = path.join(defaultBoardsDir, '..', 'firmware', 'examples', id);
    for (const program of ['hello', 'exit', 'crash']) expect(existsSync(path.join(dir, `${program}.elf`)), `${id}/${program}.elf`).toBe(true);
  });

  it('keeps the facts other backends rely on', () => {
    expect(byId.get('stm32f4-discovery')!.backends.renode).toEqual({
      platform: 'platforms/boards/stm32f4_discovery-kit.repl',
      uart: 'sysbus.usart2',
    });
    expect(byId.get('stm32f4-discovery')!.mcu.uarts.find((u) => u.name === 'usart2')?.base).toBe(0x40004400);
    expect(byId.get('pico')!.mcu.uarts.find((u) => u.name === 'uart0')?.base).toBe(0x40034000);
    expect(byId.get('uno')!.mcu.architecture).toBe('avr');
    expect(byId.get('mps2-an505')!.mcu.uarts.find((u) => u.name === 'uart0')?.base).toBe(0x50200000);
  });
});

describe('loadBoardCatalog rejects bad files with a message naming file and field', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const mcu = (id: string, memory: string) =>
    [`id: ${id}`, 'name: X', 'vendor: Y', 'architecture: arm', 'core: cortex-m3', 'clockHz: 1000000', 'memory:', memory].join('\n');
  const goodMemory = '  - { name: flash, kind: flash, start: 0, sizeBytes: 0x1000 }\n  - { name: sram, kind: ram, start: 0x20000000, sizeBytes: 0x1000 }';
  const board = (id: string, mcuId: string) => [`id: ${id}`, 'name: B', `mcu: ${mcuId}`, 'backends: {}'].join('\n');

  function setup(files: Record<string, string>): string {
    dir = mkdtempSync(path.join(tmpdir(), 'hilbench-boards-'));
    mkdirSync(path.join(dir, 'mcus'));
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    return dir;
  }

  it('accepts a minimal good catalog', () => {
    setup({ 'mcus/m1.yaml': mcu('m1', goodMemory), 'b1.yaml': board('b1', 'm1') });
    expect(loadBoardCatalog(dir).map((b) => b.id)).toEqual(['b1']);
  });

  it('a board id that differs from its file name', () => {
    setup({ 'mcus/m1.yaml': mcu('m1', goodMemory), 'b1.yaml': board('other', 'm1') });
    expect(() => loadBoardCatalog(dir)).toThrow(/b1\.yaml: board id "other" must equal the file name/);
  });

  it('a board naming an MCU that does not exist', () => {
    setup({ 'mcus/m1.yaml': mcu('m1', goodMemory), 'b1.yaml': board('b1', 'nope') });
    expect(() => loadBoardCatalog(dir)).toThrow(/unknown MCU "nope" \(known: m1\)/);
  });

  it('overlapping memory regions', () => {
    setup({
      'mcus/m1.yaml': mcu('m1', '  - { name: a, kind: flash, start: 0, sizeBytes: 0x1000 }\n  - { name: b, kind: ram, start: 0x800, sizeBytes: 0x1000 }'),
      'b1.yaml': board('b1', 'm1'),
    });
    expect(() => loadBoardCatalog(dir)).toThrow(BoardFileError);
    expect(() => loadBoardCatalog(dir)).toThrow(/memory regions a and b overlap/);
  });

  it('an unknown backend key', () => {
    setup({ 'mcus/m1.yaml': mcu('m1', goodMemory), 'b1.yaml': `${board('b1', 'm1').replace('backends: {}', 'backends:\n  jtag: {}')}` });
    expect(() => loadBoardCatalog(dir)).toThrow(/b1\.yaml: backends: Unrecognized key/);
  });
});
