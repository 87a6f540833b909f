import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { FirmwareImage } from '../backend.js';
import { loadFirmwareImage } from '../image-check.js';

/**
 * The bench file (docs/bench-file.md): where each physical board of this bench is attached. Board
 * files stay data about the board; which probe, which serial device and how long a flash may take
 * belong to the bench, so they live here: one entry per physical board, under its catalog board id
 * (a list of named instances when the bench has several of one board: a pool, decision 0550).
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

const benchBoardFields = z
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
  .strict();

function refineResetMethod(board: { probe: { kind: string }; resetMethod: string }, ctx: z.RefinementCtx): void {
  if (board.probe.kind === 'probe-rs' && board.resetMethod === 'hardware') {
    ctx.addIssue({
      code: 'custom',
      path: ['resetMethod'],
      message: 'hardware reset is OpenOCD-only here (probe-rs resets through the debug port); use "system"',
    });
  }
}

/** One physical board: `boards.<id>` (a pool of one). */
export const benchBoardSchema = benchBoardFields.superRefine(refineResetMethod);

/** One physical board of a pool of several (`boards.<id>` as a list, decision 0550), named by `instance`. */
export const benchInstanceSchema = benchBoardFields
  .extend({ instance: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'instance names are lower-case kebab-case, e.g. "left" or "kit-2"') })
  .strict()
  .superRefine(refineResetMethod);

const boardIdSchema = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'board ids are lower-case kebab-case');

export const benchFileSchema = z
  .object({
    version: z.literal(1),
    /** Consecutive infrastructure failures after which a board is quarantined. */
    quarantineAfterFailures: z.number().int().positive().default(3),
    /** Each value is one entry (checked by `benchBoardSchema`) or a list of them (`benchInstanceSchema`): checked per board in `parseBenchFile`. */
    boards: z.record(boardIdSchema, z.unknown()),
  })
  .strict();

export type BenchBoard = z.infer<typeof benchBoardSchema>;
export type BenchInstance = z.infer<typeof benchInstanceSchema>;

/** A validated bench file. `healthCheck.elf` paths are absolute (resolved against the file). */
export interface BenchFile extends Omit<z.infer<typeof benchFileSchema>, 'boards'> {
  /**
   * Each board's entry; for a board given as a list (a pool of several physical boards, decision
   * 0550) its first instance, so what is the same for every instance (tool, timeouts) reads as before.
   */
  boards: Record<string, BenchBoard>;
  /** The boards given as a list: their instances in the file's order (instance n is `<id>.<n>@<worker>`). */
  pools: Record<string, BenchInstance[]>;
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
  const issues: string[] = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  const single: Record<string, BenchBoard> = {};
  const pools: Record<string, BenchInstance[]> = {};
  for (const [id, value] of Object.entries(parsed.success ? parsed.data.boards : {})) {
    const entry = Array.isArray(value) ? z.array(benchInstanceSchema).min(1).safeParse(value) : benchBoardSchema.safeParse(value);
    if (!entry.success) issues.push(...entry.error.issues.map((i) => `${['boards', id, ...i.path].join('.')}: ${i.message}`));
    else if (Array.isArray(entry.data)) pools[id] = entry.data;
    else single[id] = entry.data;
  }
  if (!parsed.success || issues.length > 0) throw new BenchFileError(`${source}: ${issues.join('; ')}`);
  refuseOneBoardTwice(source, entriesOf(single, pools));
  // Read and parsed now: a missing or broken health-check image is a bench-file error at start,
  // not a failed check (counted against a healthy board) at 3 a.m.
  const withImage = <T extends BenchBoard>(board: T, field: string): T => {
    if (!board.healthCheck) return board;
    const elf = path.resolve(baseDir, board.healthCheck.elf);
    readHealthCheckImage(elf, `${source}: ${field}.healthCheck.elf`);
    return { ...board, healthCheck: { ...board.healthCheck, elf } };
  };
  const boards = Object.fromEntries(Object.entries(single).map(([id, board]) => [id, withImage(board, `boards.${id}`)]));
  const resolvedPools = Object.fromEntries(Object.entries(pools).map(([id, list]) => [id, list.map((board, i) => withImage(board, `boards.${id}.${i}`))]));
  for (const [id, list] of Object.entries(resolvedPools)) boards[id] = list[0]!;
  return { ...parsed.data, boards, pools: resolvedPools, source };
}

/** One entry of the file, where it is (`boards.pico` or `boards.pico.1 (instance right)`), for the refusals. */
interface PlacedEntry {
  field: string;
  board: string;
  instance?: string;
  attachment: BenchBoard;
}

function entriesOf(single: Record<string, BenchBoard>, pools: Record<string, BenchInstance[]>): PlacedEntry[] {
  return [
    ...Object.entries(single).map(([board, attachment]) => ({ field: `boards.${board}`, board, attachment })),
    ...Object.entries(pools).flatMap(([board, list]) =>
      list.map((attachment, i) => ({ field: `boards.${board}.${i} (instance ${attachment.instance})`, board, instance: attachment.instance, attachment })),
    ),
  ];
}

/**
 * Two entries for one physical board (decision 0550): the same probe (its USB serial number), the
 * same serial device (the path, or what its symlink points at when it is plugged in), or two
 * instances of one board with one name. Two jobs would then flash one board at once, so the whole
 * file is refused, naming both entries of every such pair, before anything runs.
 */
function refuseOneBoardTwice(source: string, entries: readonly PlacedEntry[]): void {
  const problems: string[] = [];
  const firstBy = new Map<string, PlacedEntry>();
  const same = (key: string, entry: PlacedEntry, what: string) => {
    const first = firstBy.get(key);
    if (first) problems.push(`${first.field} and ${entry.field} ${what}`);
    else firstBy.set(key, entry);
  };
  for (const entry of entries) {
    const { probe, serial } = entry.attachment;
    same(`probe:${probe.serialNumber}`, entry, `name the same probe (serialNumber "${probe.serialNumber}")`);
    const device = realDevicePath(serial.path);
    same(`serial:${device}`, entry, `name the same serial device (${serial.path === device ? serial.path : `${serial.path}, i.e. ${device}`})`);
    if (entry.instance !== undefined) same(`instance:${entry.board}.${entry.instance}`, entry, `name the same instance "${entry.instance}" of ${entry.board}`);
  }
  if (problems.length > 0) {
    throw new BenchFileError(`${source}: two entries for one physical board: ${problems.join('; ')}; each physical board is one entry (a board with several is a list of instances, docs/bench-file.md)`);
  }
}

/** The device a serial path names: its symlink's target when it exists now (a by-id name and its ttyACMn), else the path. */
function realDevicePath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
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
