import { readFileSync } from 'node:fs';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { SimDevice } from '../backends/sim/sim-device.js';
import { NANOS_PER_SECOND } from '../backends/backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { type BenchRow, cpuMs } from './measure.js';
import { ROM_CALL_CYCLES } from '../sim/rp2040/own-rom-calls.js';
import { withImageWord } from './image-word.js';
import { RawRp2040jsThread, settle } from './raw-rp2040js.js';

/**
 * Rounds of the compute images' work in the bench: 40 times the committed 4000, about 12 M
 * instructions and a second of host time a run, so a run's fixed costs (under 0.5 ms, measured
 * in its own row) are under 0.1 % of it and the ratio is one of simulation speed (decision 0735).
 */
const BENCH_COMPUTE_ROUNDS = 160_000;
/**
 * Steps of float-heavy's oscillator in the bench: 40 times the committed 800, about 3.8 M
 * instructions a run. The committed run (95 k instructions, 5 to 15 ms of CPU) was shorter than
 * V8's warm-up: a raw side's run that recompiled took 30 to 180 ms, and 8 such runs measured the
 * JIT, not the engine (decision 0820).
 */
const BENCH_FLOAT_STEPS = 32_000;
/** Simulated time a bench run may take: the long compute run needs about 1.2 s at 12 MHz, float-heavy about 1.4 s. */
const RUN_LIMIT_NANOS = 10 * NANOS_PER_SECOND;
const committedImage = (program: string) => new Uint8Array(readFileSync(new URL(`../firmware/examples/pico/${program}.elf`, import.meta.url)));
const image = (program: string) =>
  withImageWord(committedImage(program), program === 'float-heavy' ? { symbol: 'float_steps', value: BENCH_FLOAT_STEPS } : { symbol: 'compute_rounds', value: BENCH_COMPUTE_ROUNDS });

/** Instructions, simulated and host time summed over the runs of one image on one side. */
interface Totals {
  instructions: number;
  simulatedNanos: number;
  hostMs: number;
}
const zero = (): Totals => ({ instructions: 0, simulatedNanos: 0, hostMs: 0 });
function add(t: Totals, instructions: number, simulatedNanos: number, hostMs: number) {
  t.instructions += instructions;
  t.simulatedNanos += simulatedNanos;
  t.hostMs += hostMs;
}
/** Rounds run before the counted ones, on both sides: V8 compiles the hot paths of each thread in them. */
const WARM_UP_RUNS = 3;
const mips = (t: Totals) => t.instructions / (t.hostMs / 1000) / 1e6;
const realTime = (t: Totals) => t.simulatedNanos / 1e6 / t.hostMs;

/**
 * Both RP2040 cores and the ROM path on the sim backend against raw rp2040js (issue 28), each
 * image run to its exit again and again, the two sides alternating run by run so both see the
 * same machine load, each side in a worker thread of its own (the engine's, and raw rp2040js's:
 * decision 0571), timed in process CPU time from the request to the answer, after warm-up rounds
 * that are not counted:
 * - `compute` (integer work on core 0; core 1 waits in the boot ROM) against the same image on
 *   raw rp2040js: what a second core costs while it waits;
 * - `compute-dual` (the same work on both cores at once): instructions per second of both cores
 *   together against raw rp2040js running `compute` on its one core;
 * - `float-heavy` (soft float and double through the ROM's SF/SD tables) against raw rp2040js
 *   with the ROM's entries dispatched to the same TypeScript functions.
 */
export async function runMulticoreBench(options: { repeats?: number; warmUps?: number } = {}): Promise<BenchRow[]> {
  const repeats = options.repeats ?? 8;
  const warmUps = options.warmUps ?? WARM_UP_RUNS;
  const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const backend = new SimBackend({ clock: systemClock, onUnmodelled: () => {} });
  const programs = ['compute', 'compute-dual', 'float-heavy'] as const;
  const sim = Object.fromEntries(programs.map((p) => [p, zero()])) as Record<(typeof programs)[number], Totals>;
  const raw = { compute: zero(), 'float-heavy': zero() };
  const devices = new Map<string, SimDevice>();
  let fixedRunMs = 0;
  // One thread per image on each side, as the sim backend gives each device its engine thread.
  const rawThreads = { compute: RawRp2040jsThread.start(), 'float-heavy': RawRp2040jsThread.start() };
  try {
    for (const program of programs) {
      const device = await backend.open(pico);
      if (!(device instanceof SimDevice)) throw new Error('the sim backend returned a device that is not a SimDevice');
      await device.flash(loadFirmwareImage(image(program)));
      devices.set(program, device);
    }
    for (let i = -warmUps; i < repeats; i++) {
      // The first rounds compile both sides' hot paths; only the rounds after them count.
      const counted = i >= 0;
      for (const program of programs) {
        const device = devices.get(program)!;
        await device.reset();
        const before = device.stats;
        await settle();
        const t0 = cpuMs();
        const stop = await device.run(RUN_LIMIT_NANOS);
        const hostMs = cpuMs() - t0;
        if (stop.reason !== 'exited' || stop.exitCode !== 0) throw new Error(`${program} on the sim backend did not pass: ${JSON.stringify(stop)}`);
        const after = device.stats;
        const simInstructions = after.instructions - before.instructions;
        if (counted) add(sim[program], simInstructions, after.simulatedNanos - before.simulatedNanos, hostMs);
        if (program === 'compute') {
          // The fixed cost of a run, kept in sight: a 1 us run through the backend on the same device,
          // without a settle() before it, whose collection's sweeping would land in so short a run.
          const f0 = cpuMs();
          await device.run(1000);
          if (counted) fixedRunMs += cpuMs() - f0;
        }
        if (program === 'compute-dual') continue;
        const rawThread = rawThreads[program];
        await rawThread.load(image(program));
        await settle();
        const r0 = cpuMs();
        const run = await rawThread.run();
        const rawMs = cpuMs() - r0;
        // Both sides count a ROM call as one instruction: the same image must take the same count, or the ratio compares different work.
        if (run.instructions !== simInstructions) throw new Error(`${program}: raw rp2040js ran ${run.instructions} instructions where the sim backend ran ${simInstructions}`);
        if (counted) add(raw[program], run.instructions, run.simulatedNanos, rawMs);
      }
    }
  } finally {
    for (const device of devices.values()) await device.close();
    for (const thread of Object.values(rawThreads)) await thread.close();
  }
  const note = `${repeats} runs to the exit after ${warmUps} uncounted, alternated with raw rp2040js`;
  const perRun = (t: Totals) => `${Math.round(t.instructions / repeats / 1e3)} k instructions a run`;
  const clockNote = 'clk_sys 12 MHz (the images run clk_sys from the crystal)';
  const row = (name: string, t: Totals, what: string, timeNote = clockNote): BenchRow[] => [
    { name: `${name}: instructions per second`, value: mips(t), unit: 'M instr/s', note: `${what}; ${note}` },
    { name: `${name}: simulated time / host time`, value: realTime(t), unit: 'x real time', note: timeNote },
  ];
  return [
    ...row('sim pico, compute (core 1 waiting in the ROM)', sim.compute, perRun(sim.compute)),
    ...row('raw rp2040js, compute', raw.compute, 'same image and instruction count, bare execute/tick loop in a worker thread'),
    {
      name: 'sim pico, a 1 us run: process CPU per run',
      value: fixedRunMs / repeats,
      unit: 'ms',
      note: 'the fixed cost every run pays (request, thread wake-ups, answer), right after a compute run (decision 0735)',
    },
    { name: 'compute: sim pico / raw rp2040js', value: mips(sim.compute) / mips(raw.compute), unit: 'x', note: 'goal >= 0.95: a waiting core 1 costs nothing' },
    ...row('sim pico, compute-dual (both cores busy)', sim['compute-dual'], 'instructions of both cores together'),
    {
      name: 'compute-dual, both cores / raw rp2040js single core',
      value: mips(sim['compute-dual']) / mips(raw.compute),
      unit: 'x',
      note: 'goal >= 0.9: instructions per second of both cores together against raw rp2040js on compute',
    },
    ...row('sim pico, float-heavy', sim['float-heavy'], `soft float/double through the own ROM, ${perRun(sim['float-heavy'])}`, `${clockNote}; a ROM call is charged ${ROM_CALL_CYCLES} cycles`),
    ...row(
      'raw rp2040js, float-heavy',
      raw['float-heavy'],
      'same image and instruction count, ROM entries dispatched to the same functions',
      `${clockNote}; a ROM call takes no simulated time in the raw loop, so this row is not comparable with the sim's`,
    ),
    { name: 'float-heavy: sim pico / raw rp2040js', value: mips(sim['float-heavy']) / mips(raw['float-heavy']), unit: 'x', note: 'above 1: the engine is faster' },
  ];
}
