import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { parseElf } from '../../core/elf.js';
import {
  expectedFirmware,
  firmwareDir,
  firmwarePath,
  loadFirmwareManifest,
  programsFor,
  sha256Hex,
} from './firmware-manifest.js';
import { runSimBoard } from './run-sim.js';

/**
 * The committed example firmware against its manifest, without any toolchain: hashes, the
 * expectations, and the sim-board images run on rp2040js / avr8js directly. QEMU images are
 * run by ci/check-firmware.ts (npm run check:firmware) and by the QEMU backend's contract tests.
 */

const manifest = loadFirmwareManifest();
const catalog = loadBoardCatalog();

describe('firmware/examples/manifest.json', () => {
  it('lists hello, exit and crash for every board in the catalog, plus the board-only programs, and nothing else', () => {
    const listed = manifest.firmware.map((f) => `${f.board}/${f.program}`).sort();
    const wanted = catalog.flatMap((b) => programsFor(b.id).map((p) => `${b.id}/${p}`)).sort();
    expect(listed).toEqual(wanted);
  });

  it('names only repo files that exist in its description (scripts get renamed)', () => {
    const named = manifest.description.match(/[\w./-]+\.(?:sh|ts|md)\b/g) ?? [];
    expect(named).toContain('ci/check-firmware.ts');
    const root = path.resolve(firmwareDir, '../..');
    const resolve = (p: string) => (p.includes('/') ? path.join(root, p) : path.join(firmwareDir, p));
    expect(named.filter((p) => !existsSync(resolve(p)))).toEqual([]);
  });

  it('lists every committed ELF (no stray images)', () => {
    const onDisk = readdirSync(firmwareDir)
      .filter((d) => statSync(path.join(firmwareDir, d)).isDirectory())
      .flatMap((d) => readdirSync(path.join(firmwareDir, d)).filter((f) => f.endsWith('.elf')).map((f) => `${d}/${f}`))
      .sort();
    expect(onDisk).toEqual(manifest.firmware.map((f) => f.path).sort());
  });

  it.each(manifest.firmware.map((f) => [f.path, f] as const))('%s: sha256 and size match the committed file', (_p, entry) => {
    const bytes = readFileSync(firmwarePath(entry));
    expect(sha256Hex(bytes)).toBe(entry.sha256);
    expect(bytes.length).toBe(entry.sizeBytes);
    // Small, as a bare-metal example should be; a big jump means something pulled in a library.
    // (rom-test carries its table of float and double cases: 16 KiB.)
    expect(bytes.length).toBeLessThan((entry.program === 'rom-test' ? 16 : 8) * 1024);
  });

  it.each(manifest.firmware.map((f) => [f.path, f] as const))('%s: expectations agree with firmware-manifest.ts', (_p, entry) => {
    const board = catalog.find((b) => b.id === entry.board)!;
    const { sha256: _sha, sizeBytes: _size, ...rest } = entry;
    expect(rest).toEqual(expectedFirmware(board, entry.program));
  });

  it.each(manifest.firmware.map((f) => [f.path, f] as const))('%s: an executable whose entry is its reset handler', (_p, entry) => {
    const bytes = readFileSync(firmwarePath(entry));
    const elf = parseElf(bytes);
    expect(elf.type).toBe(2);
    const board = catalog.find((b) => b.id === entry.board)!;
    if (board.mcu.architecture === 'arm') {
      // Word 1 of the vector table (the first loadable bytes, or those after a boot2 stage) is the reset handler, Thumb bit set.
      const boot2 = elf.sections.some((s) => s.name === '.boot2');
      const text = elf.segments.filter((s) => s.type === 1 && s.fileSizeBytes > 0)[boot2 ? 1 : 0]!;
      const resetVector = new DataView(bytes.buffer, bytes.byteOffset).getUint32(text.offset + 4, true);
      expect(resetVector & 1).toBe(1);
      expect(resetVector & ~1).toBe(elf.symbols.find((s) => s.name === 'reset_handler')!.value & ~1);
      expect(elf.entry).toBe(resetVector);
    } else {
      expect(elf.entry).toBe(0); // AVR: the reset vector at word 0
    }
  });

  it('uartPattern regexes match the exact text docs/firmware.md promises', () => {
    const pattern = (board: string, program: string) => new RegExp(manifest.firmware.find((f) => f.board === board && f.program === program)!.uartPattern);
    expect(pattern('mps2-an385', 'hello').test('hilbench hello board=mps2-an385\r\ntick 1\r\ntick 2\r\ntick 3\r\n')).toBe(true);
    expect(pattern('mps2-an385', 'hello').test('hilbench hello board=mps2-an386\r\ntick 1\r\ntick 2\r\ntick 3\r\n')).toBe(false);
    expect(pattern('mps2-an385', 'hello').test('hilbench hello board=mps2-an385\r\ntick 1\r\ntick 3\r\n')).toBe(false);
    expect(pattern('uno', 'exit').test('hilbench exit board=uno code=3\r\n')).toBe(true);
    expect(pattern('pico', 'crash').test('hilbench crash board=pico: jumping to 0xfffffff0 (execute-never) with no fault handler\r\n')).toBe(true);
  });
});

describe('sim-board firmware runs on the emulator libraries as the manifest says', () => {
  const simEntries = manifest.firmware.filter((f) => f.backend === 'sim');
  it('covers both simulators', () => {
    expect(new Set(simEntries.map((f) => f.checkedWith))).toEqual(new Set(['rp2040js', 'avr8js']));
  });

  it.each(simEntries.map((f) => [f.path, f] as const))('%s', (_p, entry) => {
    // hello needs 0.3 s of board time for three ticks; exit and crash stop within milliseconds.
    const run = runSimBoard(entry.board, readFileSync(firmwarePath(entry)), { simulatedSeconds: 0.35 });
    expect(run.uart).toMatch(new RegExp(entry.uartPattern));
    if (entry.outcome === 'runs') {
      expect(run.stop).toEqual({ reason: 'elapsed' });
      expect(run.uart).not.toMatch(/tick 4\r\n/); // ticks every 100 ms of board time, not faster
    }
    if (entry.outcome === 'exits') expect(run.stop).toEqual({ reason: 'exited', exitCode: entry.exitCode });
    if (entry.outcome === 'crashes') expect(run.stop.reason).toBe('crashed');
    if (entry.outcome !== 'runs') expect(run.simulatedNanos).toBeLessThan(50_000_000);
  });
});
