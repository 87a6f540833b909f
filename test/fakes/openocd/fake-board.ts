import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseElf, sectionBytes } from '../../../core/elf.js';

/**
 * The stand-in bench behind the fake `openocd` and `probe-rs` programs (test/fakes/openocd/README.md):
 * which fake probes are "attached", how each misbehaves, and the "board" behind each probe, whose
 * firmware writes to the board end of a socat pty pair when reset is released.
 *
 * A test writes the JSON file named by `HILBENCH_FAKE_PROBES`; every tool invocation reads it
 * again, so a test can change a probe's behaviour between steps.
 */
export const fakeBehaviours = [
  'ok',
  /** `program` fails writing flash. */
  'program-fail',
  /** Programming works, verification does not. */
  'verify-fail',
  /** Every invocation hangs until SIGTERM. */
  'hang',
  /** Every invocation hangs and ignores SIGTERM (only SIGKILL ends it). */
  'hang-ignore-term',
  /** Flash works; releasing reset fails. */
  'reset-fail',
  /** Everything works; the board prints nothing. */
  'silent',
] as const;
export type FakeBehaviour = (typeof fakeBehaviours)[number];

export interface FakeProbe {
  serialNumber: string;
  /** The board end of the pty pair; the firmware writes its UART output there. */
  uart: string;
  behaviour: FakeBehaviour;
  /** Holds the flashed image, the running firmware's pid and the invocation log. */
  stateDir: string;
}

/**
 * Checks one config entry. Hand-written rather than zod: the stand-ins start on every tool
 * invocation, and bundling zod would triple their start-up time.
 */
function parseFakeProbe(raw: unknown, index: number): FakeProbe {
  const where = `${FAKE_PROBES_ENV} probes[${index}]`;
  if (typeof raw !== 'object' || raw === null) throw new Error(`${where}: expected an object`);
  const entry = raw as Record<string, unknown>;
  const text = (key: string) => {
    const value = entry[key];
    if (typeof value !== 'string' || value === '') throw new Error(`${where}.${key}: expected a non-empty string`);
    return value;
  };
  const behaviour = entry.behaviour ?? 'ok';
  const known = fakeBehaviours.find((b) => b === behaviour);
  if (!known) throw new Error(`${where}.behaviour: expected one of ${fakeBehaviours.join(', ')}`);
  return { serialNumber: text('serialNumber'), uart: text('uart'), behaviour: known, stateDir: text('stateDir') };
}

export const FAKE_PROBES_ENV = 'HILBENCH_FAKE_PROBES';

/** The transcript every fake firmware starts with, unless its ELF has a `.hilbench.uart` section. */
export function fakeBootLine(sha256: string): string {
  return `hilbench-fake-board: boot sha256=${sha256.slice(0, 16)}\r\n`;
}
export const FAKE_TICK_MS = 100;

/** What the fake firmware of `image` prints first: its `.hilbench.uart` section, else `fakeBootLine`. */
export function bootText(image: Uint8Array): Uint8Array {
  const custom = sectionBytes(image, parseElf(image), '.hilbench.uart');
  return custom ?? new TextEncoder().encode(fakeBootLine(createHash('sha256').update(image).digest('hex')));
}

/**
 * The firmware script. The stand-ins run as esbuild bundles from a cache directory (see
 * run-fake.sh), where `import.meta.url` no longer points here, so the wrapper says where it is.
 */
const firmwareScript = process.env.HILBENCH_FAKE_FIRMWARE ?? path.join(path.dirname(fileURLToPath(import.meta.url)), 'fake-firmware.mjs');

/** Writes the config file the fakes read; returns its path (tests pass it as `HILBENCH_FAKE_PROBES`). */
export function writeFakeProbes(file: string, probes: Array<Omit<FakeProbe, 'behaviour'> & { behaviour?: FakeBehaviour }>): string {
  writeFileSync(file, JSON.stringify({ probes }, null, 2));
  for (const p of probes) mkdirSync(p.stateDir, { recursive: true });
  return file;
}

/** The attached fake probes, or none when the variable is unset (like a bench with nothing plugged in). */
export function readFakeProbes(): FakeProbe[] {
  const file = process.env[FAKE_PROBES_ENV];
  if (!file) return [];
  const raw: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const probes = (raw as { probes?: unknown } | null)?.probes;
  if (!Array.isArray(probes)) throw new Error(`${file}: expected { "probes": [...] }`);
  return probes.map(parseFakeProbe);
}

/** The board behind one fake probe. */
export class FakeBoard {
  constructor(readonly probe: FakeProbe) {
    mkdirSync(probe.stateDir, { recursive: true });
  }

  /** The flashed image. */
  get imagePath(): string {
    return path.join(this.probe.stateDir, 'flash.elf');
  }

  private get pidPath() {
    return path.join(this.probe.stateDir, 'firmware.pid');
  }

  /** Appends one line to the invocation log tests read (`invocations.log`). */
  log(line: string): void {
    appendFileSync(path.join(this.probe.stateDir, 'invocations.log'), `${line}\n`);
  }

  /** Stops the firmware (core halted) and stores the new image. */
  program(elfPath: string): void {
    this.halt();
    copyFileSync(elfPath, this.imagePath);
  }

  /** Stops the running firmware, if any: the core is held. */
  halt(): void {
    if (!existsSync(this.pidPath)) return;
    const pid = Number(readFileSync(this.pidPath, 'utf8'));
    rmSync(this.pidPath, { force: true });
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Already gone (it exits by itself when its pty closes).
    }
  }

  /** Releases reset: the flashed firmware starts from the beginning, writing to the pty. */
  run(): void {
    this.halt();
    if (!existsSync(this.imagePath) || this.probe.behaviour === 'silent') return;
    const boot = Buffer.from(bootText(new Uint8Array(readFileSync(this.imagePath)))).toString('base64');
    const child = spawn(process.execPath, [firmwareScript, this.probe.uart, this.pidPath, boot, String(FAKE_TICK_MS)], {
      detached: true,
      stdio: 'ignore',
    });
    writeFileSync(this.pidPath, String(child.pid));
    child.unref();
  }
}

/** Blocks for ever (until a signal), as a wedged tool does. */
export function hangForever(ignoreSigterm: boolean): void {
  if (ignoreSigterm) process.on('SIGTERM', () => undefined);
  setInterval(() => undefined, 60_000);
}
