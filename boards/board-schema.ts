import { z } from 'zod';

/**
 * Board and MCU files are data only (YAML under `boards/` and `boards/mcus/`), parsed here into
 * typed values. A board names its MCU; the MCU holds the memory map and architecture; each
 * backend adds only its own keys under `backends.<name>` (Renode's .repl layering, in spirit).
 */

const address = z.number().int().nonnegative().max(0xffff_ffff);

export const memoryRegionSchema = z
  .object({
    name: z.string().min(1),
    kind: z.enum(['flash', 'ram', 'rom', 'eeprom']),
    start: address,
    sizeBytes: z.number().int().positive(),
  })
  .strict();

export const architectures = ['arm', 'avr'] as const;
export type Architecture = (typeof architectures)[number];

/** ELF `e_machine` per architecture (ELF gABI): EM_ARM = 40, EM_AVR = 83. */
export const elfMachineFor: Record<Architecture, number> = { arm: 40, avr: 83 };

export const mcuSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/),
    name: z.string().min(1),
    vendor: z.string().min(1),
    architecture: z.enum(architectures),
    core: z.string().min(1),
    clockHz: z.number().int().positive(),
    memory: z.array(memoryRegionSchema).min(1),
    uarts: z.array(z.object({ name: z.string().min(1), base: address }).strict()).default([]),
  })
  .strict()
  .superRefine((mcu, ctx) => {
    const sorted = [...mcu.memory].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      const cur = sorted[i]!;
      if (prev.start + prev.sizeBytes > cur.start) {
        ctx.addIssue({ code: 'custom', message: `memory regions ${prev.name} and ${cur.name} overlap`, path: ['memory'] });
      }
    }
  });

export type Mcu = z.infer<typeof mcuSchema>;
export type MemoryRegion = z.infer<typeof memoryRegionSchema>;

export { backendNames, type BackendName } from './backend-names.js';

/** Backend-specific keys. Each backend validates its own entry again when it opens a board. */
const backendKeysSchema = z
  .object({
    sim: z.object({ engine: z.enum(['rp2040js', 'avr8js']), uart: z.string().min(1) }).strict().optional(),
    qemu: z
      .object({
        machine: z.string().min(1),
        cpu: z.string().min(1).optional(),
        semihosting: z.boolean().default(true),
        /** Which MCU UART QEMU connects to its first `-serial` (serial0), e.g. `uart0`; a note for humans and checks. */
        uart: z.string().min(1).optional(),
        /**
         * Deterministic guest time: run with `-icount shift=N,align=off,sleep=off`, so the guest's
         * clocks advance 2^N ns per instruction instead of following the host (docs/backends/qemu.md).
         */
        icount: z.number().int().min(0).max(10).optional(),
      })
      .strict()
      .optional(),
    renode: z
      .object({ platform: z.string().min(1), uart: z.string().min(1) })
      .strict()
      .optional(),
    probe: z.object({ openocdTarget: z.string().min(1).optional(), probeRsChip: z.string().min(1).optional() }).strict().optional(),
  })
  .strict();

export const boardFileSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'board ids are lower-case kebab-case, equal to the file name'),
    name: z.string().min(1),
    description: z.string().default(''),
    mcu: z.string().min(1),
    /** Backends that can run this board, in order of preference (`mock` runs every board). */
    backends: backendKeysSchema.default({}),
    /**
     * The board's names for MCU pins, as printed on the board (`D13: PB5`, `LED: GP25`): what
     * scenario pin steps may say besides the MCU's own names. Checked against the MCU's pins by
     * the backends that model pins.
     */
    pins: z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/, 'pin names are letters, digits and _'), z.string().min(1)).default({}),
  })
  .strict();

export type BoardFile = z.infer<typeof boardFileSchema>;

/** A board with its MCU resolved: what every backend receives. */
export interface Board extends Omit<BoardFile, 'mcu'> {
  readonly mcu: Mcu;
}
