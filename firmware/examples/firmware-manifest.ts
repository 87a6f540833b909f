import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Board } from '../../boards/board-schema.js';

/**
 * The example firmware manifest (firmware/examples/manifest.json): for every board, which
 * prebuilt ELF runs where and what it must print. Tests read it through `loadFirmwareManifest`;
 * `expectedFirmware` is the single place that says what each program prints, and
 * update-manifest.ts writes the file from it.
 */

export const firmwareDir = path.dirname(fileURLToPath(import.meta.url));
export const firmwarePrograms = ['hello', 'exit', 'crash'] as const;
export type FirmwareProgram = (typeof firmwarePrograms)[number];
/**
 * Programs built for one board only, on top of hello, exit and crash: `rom-test` is an RP2040
 * image with a boot2 stage that checks the simulator's own boot ROM, `multicore` one that runs
 * both RP2040 cores (launch, FIFOs, spinlocks, an interrupt on core 1, a divider per core;
 * docs/backends/sim.md), `multicore-sdk` one that drives them as a Pico SDK program does (reset
 * and launch of core 1, blocking FIFO calls, FIFO interrupts, a mutex, lockout); `compute`, `compute-dual` and `float-heavy` are the images
 * perf/multicore.bench.ts measures (integer work on core 0 alone and on both cores, soft float
 * and double through the ROM).
 */
export const boardOnlyPrograms = { pico: ['rom-test', 'multicore', 'multicore-sdk', 'compute', 'compute-dual', 'float-heavy'] } as const satisfies Record<string, readonly string[]>;
export type BoardOnlyProgram = (typeof boardOnlyPrograms)[keyof typeof boardOnlyPrograms][number];
/** Every program listed for `boardId`. */
export const programsFor = (boardId: string): ReadonlyArray<FirmwareProgram | BoardOnlyProgram> => [
  ...firmwarePrograms,
  ...((boardOnlyPrograms as Record<string, readonly BoardOnlyProgram[]>)[boardId] ?? []),
];

export const firmwareEntrySchema = z
  .object({
    board: z.string().min(1),
    program: z.enum([...firmwarePrograms, ...boardOnlyPrograms.pico]),
    /** Relative to firmware/examples/. */
    path: z.string().regex(/^[a-z0-9-]+\/[a-z-]+\.elf$/),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    sizeBytes: z.number().int().positive(),
    backend: z.enum(['sim', 'qemu', 'renode']),
    /** A JavaScript regular expression the start of the UART capture must match. */
    uartPattern: z.string().min(1),
    /** `runs`: prints for ever; `exits`: stops with `exitCode`; `crashes`: faults after printing. */
    outcome: z.enum(['runs', 'exits', 'crashes']),
    exitCode: z.number().int().nullable(),
    /** Exit status of qemu-system-arm when the program stops on its own (3 on exit, 134 on lockup). */
    qemuExitStatus: z.number().int().nullable(),
    /** The emulator ci/check-firmware.ts (npm run check:firmware) runs this image on, or null when none can run here (Renode). */
    checkedWith: z.enum(['rp2040js', 'avr8js', 'qemu-system-arm']).nullable(),
  })
  .strict();
export type FirmwareEntry = z.infer<typeof firmwareEntrySchema>;

export const firmwareManifestSchema = z
  .object({
    version: z.literal(1),
    description: z.string(),
    firmware: z.array(firmwareEntrySchema).min(1),
  })
  .strict();
export type FirmwareManifest = z.infer<typeof firmwareManifestSchema>;

/** Reads and validates manifest.json (default: the committed one). */
export function loadFirmwareManifest(file = path.join(firmwareDir, 'manifest.json')): FirmwareManifest {
  const parsed = firmwareManifestSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** Absolute path of an entry's ELF. */
export const firmwarePath = (entry: Pick<FirmwareEntry, 'path'>) => path.join(firmwareDir, entry.path);

export const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What board_crash_description says in arm/arm-common.c and avr/uno.c. */
export const crashDescription = {
  arm: 'jumping to 0xfffffff0 (execute-never) with no fault handler',
  avr: 'jumping to word address 0x7ff0, beyond the 16 Ki-word flash',
} as const;

/** The backend that runs a board's example firmware: the simulator, else QEMU, else Renode. */
export function firmwareBackendFor(board: Board): FirmwareEntry['backend'] {
  if (board.backends.sim) return 'sim';
  if (board.backends.qemu) return 'qemu';
  if (board.backends.renode) return 'renode';
  throw new Error(`board ${board.id} has no sim, qemu or renode backend to run example firmware on`);
}

/** The expected behaviour of `program` on `board`: everything in an entry except the file facts. */
export function expectedFirmware(
  board: Board,
  program: FirmwareProgram | BoardOnlyProgram,
): Omit<FirmwareEntry, 'sha256' | 'sizeBytes'> {
  const backend = firmwareBackendFor(board);
  const id = escapeRegExp(board.id);
  const checkedWith: FirmwareEntry['checkedWith'] = backend === 'qemu' ? 'qemu-system-arm' : backend === 'sim' ? (board.mcu.architecture === 'avr' ? 'avr8js' : 'rp2040js') : null;
  const base = { board: board.id, program, path: `${board.id}/${program}.elf`, backend, checkedWith };
  switch (program) {
    case 'hello':
      return { ...base, uartPattern: `^hilbench hello board=${id}\\r\\ntick 1\\r\\ntick 2\\r\\ntick 3\\r\\n`, outcome: 'runs', exitCode: null, qemuExitStatus: null };
    case 'exit':
      return { ...base, uartPattern: `^hilbench exit board=${id} code=3\\r\\n`, outcome: 'exits', exitCode: 3, qemuExitStatus: backend === 'qemu' ? 3 : null };
    case 'rom-test':
      // Exits 0 after every check passed on the simulator's own boot ROM (version 3).
      return { ...base, uartPattern: `^hilbench rom-test board=${id} rom=v3\\r\\nrom-test PASS \\d+ checks\\r\\n`, outcome: 'exits', exitCode: 0, qemuExitStatus: null };
    case 'multicore':
      // Core 0 prints one line per part it checked with core 1, then exits 0.
      return {
        ...base,
        uartPattern:
          `^hilbench multicore board=${id}\\r\\nlaunch ok, fifo ping-pong 100\\r\\nspinlock counter 6000\\r\\nfifo flags ok\\r\\n` +
          `core 1 fifo interrupt sum 55\\r\\ndivider per core ok\\r\\nmulticore PASS\\r\\n`,
        outcome: 'exits',
        exitCode: 0,
        qemuExitStatus: null,
      };
    case 'multicore-sdk':
      // Core 1 prints one line under the stdio mutex; core 0 one per part, then exits 0.
      return {
        ...base,
        uartPattern:
          `^hilbench multicore-sdk board=${id}\\r\\ncore 1 up, cpuid 1\\r\\nfifo irq on core 0: 12 words, sum 78\\r\\nmutex counter 800\\r\\n` +
          `lockout: core 1 held, then released\\r\\ncore 1 reset and relaunched\\r\\nmulticore-sdk PASS\\r\\n`,
        outcome: 'exits',
        exitCode: 0,
        qemuExitStatus: null,
      };
    case 'compute':
      return { ...base, uartPattern: `^hilbench compute board=${id}\\r\\ncrc ec4f4ecc\\r\\n`, outcome: 'exits', exitCode: 0, qemuExitStatus: null };
    case 'compute-dual':
      // Both cores computed the same sum.
      return { ...base, uartPattern: `^hilbench compute board=${id}\\r\\ncrc ec4f4ecc ec4f4ecc\\r\\n`, outcome: 'exits', exitCode: 0, qemuExitStatus: null };
    case 'float-heavy':
      return {
        ...base,
        uartPattern: `^hilbench float-heavy board=${id}\\r\\nfloat 43b8a5bf double 407714b7b67da885\\r\\n`,
        outcome: 'exits',
        exitCode: 0,
        qemuExitStatus: null,
      };
    case 'crash':
      return {
        ...base,
        uartPattern: `^hilbench crash board=${id}: ${escapeRegExp(crashDescription[board.mcu.architecture])}\\r\\n`,
        outcome: 'crashes',
        exitCode: null,
        // QEMU: "qemu: fatal: Lockup: can't escalate 3 to HardFault", then abort() (128 + SIGABRT).
        qemuExitStatus: backend === 'qemu' ? 134 : null,
      };
  }
}
