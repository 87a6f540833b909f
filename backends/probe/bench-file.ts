import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { FirmwareImage } from '../backend.js';
import { loadFirmwareImage } from '../image-check.js';

/**
 * The bench file (docs/bench-file.md): where each physical board of this bench is attached. Board
 * files stay data about the board; which probe, which serial device and how long a flash may take
 * belong to the bench, so they live here, one entry per catalog board id.
 */

/** The bench file failed to read, parse or validate; the message names the file and the field. */
export class BenchFileError extends Error {
  override readonly name = 'BenchFileError';
}

const positiveMs = z.number().int().positive();

const openocdProbeSchema = z
  .object({
    kind: z.literal('openocd'),
    /** USB serial number of the adapter, passed as `adapter serial <SN>`. */
    serialNumber: z.string().min(1),
    /** Interface config, e.g. `interface/stlink.cfg` (OpenOCD's search path) or an absolute path. */
    interface: z.string().min(1),
    /** Target config, e.g. `target/stm32f4x.cfg`; defaults to the board file's `backends.probe.openocdTarget`. */
    target: z.string().min(1).optional(),
    /** `adapter speed` in kHz; the interface config's default when absent. */
    adapterSpeedKhz: z.number().int().positive().optional(),
  })
  .strict();

const probeRsProbeSchema = z
  .object({
    kind: z.literal('probe-rs'),
    serialNumber: z.string().min(1),
    /** USB `VID:PID` of the probe, hex; probe-rs selects a probe by `VID:PID:SERIAL` only. */
    vidPid: z.string().regex(/^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$/, 'expected "VID:PID" in hex, e.g. "2e8a:000c"'),
    /** probe-rs chip name, e.g. `RP2040`; defaults to the board file's `backends.probe.probeRsChip`. */
    chip: z.string().min(1).optional(),
    protocol: z.enum(['swd', 'jtag']).optional(),
  })
  .strict();

export const benchBoardSchema = z
  .object({
    probe: z.discriminatedUnion('kind', [openocdProbeSchema, probeRsProbeSchema]),
    serial: z
      .object({
        /** Prefer `/dev/serial/by-id/...`: ttyACMn numbers change when boards re-enumerate. */
        path: z.string().refine((p) => path.isAbsolute(p), 'must be an absolute path (prefer /dev/serial/by-id/...)'),
        baudRate: z.number().int().positive().default(115200),
      })
      .strict(),
    /**
     * How reset is released. `system`: the debug port's system reset (OpenOCD's default for the
     * target, probe-rs's only kind). `hardware`: the nRST line (OpenOCD `reset_config srst_only`).
     */
    resetMethod: z.enum(['system', 'hardware']).default('system'),
    timeouts: z
      .object({
        /** Whole flash-and-verify command. Large images on slow adapters take tens of seconds. */
        flashMs: positiveMs.default(120_000),
        /** Reset or halt command. */
        resetMs: positiveMs.default(15_000),
        /** Opening the serial device. */
        serialOpenMs: positiveMs.default(5_000),
        /** Between SIGTERM and SIGKILL when a tool is stopped. */
        killGraceMs: positiveMs.default(2_000),
      })
      .strict()
      .prefault({}),
    /** Firmware that proves the board healthy: flashed by `ProbeBackend.healthCheck`. */
    healthCheck: z
      .object({
        /** ELF path, relative to the bench file. */
        elf: z.string().min(1),
        /** Regular expression (JavaScript syntax) the UART output must match. */
        expect: z.string().min(1).refine(isRegExp, 'is not a valid regular expression'),
        withinSeconds: z.number().positive().default(5),
        /**
         * Run this check automatically this many seconds after the board is quarantined, and again
         * as long after each failed check (at most `maxAutomaticChecks` times). Absent: only an
         * administrator runs it.
         */
        retryAfterSeconds: z.number().positive().optional(),
        /** Bound on automatic checks per quarantine: a dead board is not flashed for ever. */
        maxAutomaticChecks: z.number().int().positive().default(5),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((board, ctx) => {
    if (board.probe.kind === 'probe-rs' && board.resetMethod === 'hardware') {
      ctx.addIssue({
        code: 'custom',
        path: ['resetMethod'],
        message: 'hardware reset is OpenOCD-only here (probe-rs resets through the debug port); use "system"',
      });
    }
  });

export const benchFileSchema = z
  .object({
    version: z.literal(1),
    /** Consecutive infrastructure failures after which a board is quarantined. */
    quarantineAfterFailures: z.number().int().positive().default(3),
    boards: z.record(z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'board ids are lower-case kebab-case'), benchBoardSchema),
  })
  .strict();

export type BenchBoard = z.infer<typeof benchBoardSchema>;

/** A validated bench file. `healthCheck.elf` paths are absolute (resolved against the file). */
export interface BenchFile extends z.infer<typeof benchFileSchema> {
  /** Where it was read from, for messages. */
  readonly source: string;
}

function isRegExp(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

/** Validates already-parsed YAML/JSON; `source` names the file in errors, `baseDir` resolves relative paths. */
export function parseBenchFile(raw: unknown, source: string, baseDir: string = path.dirname(source)): BenchFile {
  const parsed = benchFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new BenchFileError(`${source}: ${issues}`);
  }
  const boards = Object.fromEntries(
    Object.entries(parsed.data.boards).map(([id, board]) => {
      if (!board.healthCheck) return [id, board];
      const elf = path.resolve(baseDir, board.healthCheck.elf);
      // Read and parsed now: a missing or broken health-check image is a bench-file error at start,
      // not a failed check (counted against a healthy board) at 3 a.m.
      readHealthCheckImage(elf, `${source}: boards.${id}.healthCheck.elf`);
      return [id, { ...board, healthCheck: { ...board.healthCheck, elf } }];
    }),
  );
  return { ...parsed.data, boards, source };
}

/**
 * Reads and parses the health-check ELF at `file`; `field` (`<bench file>: boards.<id>.healthCheck.elf`)
 * starts the `BenchFileError` when it cannot be read or is not an ELF image.
 */
export function readHealthCheckImage(file: string, field: string): FirmwareImage {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(readFileSync(file));
  } catch (err) {
    throw new BenchFileError(`${field}: cannot read the health-check firmware ${file}: ${(err as Error).message}`);
  }
  try {
    return loadFirmwareImage(bytes);
  } catch (err) {
    throw new BenchFileError(`${field}: ${file} is not a usable firmware image: ${(err as Error).message}`);
  }
}

/** Reads and validates the bench file at `file`. Throws `BenchFileError` naming the file and field. */
export function loadBenchFile(file: string): BenchFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new BenchFileError(`${file}: cannot read the bench file: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new BenchFileError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  return parseBenchFile(raw, file, path.dirname(path.resolve(file)));
}
