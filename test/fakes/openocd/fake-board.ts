import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
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

const fakeProbeSchema = z
  .object({
    serialNumber: z.string().min(1),
    /** The board end of the pty pair; the firmware writes its UART output there. */
    uart: z.string().min(1),
    behaviour: z.enum(fakeBehaviours).default('ok'),
    /** Holds the flashed image, the running firmware's pid and the invocation log. */
    stateDir: z.string().min(1),
  })
  .strict();
const fakeProbesSchema = z.object({ probes: z.array(fakeProbeSchema) }).strict();

export type FakeProbe = z.infer<typeof fakeProbeSchema>;
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

const here = path.dirname(fileURLToPath(import.meta.url));

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
  return fakeProbesSchema.parse(JSON.parse(readFileSync(file, 'utf8'))).probes;
}

/** The board behind one fake probe. */
export class FakeBoard {
  constructor(readonly probe: FakeProbe) {
    mkdirSync(probe.stateDir, { recursive: true });
  }

  private get imagePath() {
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
    const child = spawn(process.execPath, [path.join(here, 'fake-firmware.mjs'), this.probe.uart, this.pidPath, boot, String(FAKE_TICK_MS)], {
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
