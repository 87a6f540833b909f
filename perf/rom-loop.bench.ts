import { readFileSync } from 'node:fs';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { SimDevice } from '../backends/sim/sim-device.js';
import { NANOS_PER_SECOND } from '../backends/backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { type BenchRow, cpuMs } from './measure.js';
import { RawRp2040jsThread, settle } from './raw-rp2040js.js';

const ROM_TEST = new URL('../firmware/examples/pico/rom-test.elf', import.meta.url);
/** Runs on both sides before the counted ones: V8 compiles each thread's hot paths in them. */
const WARM_UP_RUNS = 20;

/**
 * Instructions per second of an SDK-style image (boot2 stage, ROM lookups, soft float and double
 * calls: firmware/examples/pico/rom-test.elf, run to its exit again and again) on the sim
 * backend, against the same image's instruction stream on raw rp2040js, measured in the same run
 * for the same number of repetitions, alternating, so both see the same machine load. Each side
 * runs in a worker thread of its own (the engine's, and raw rp2040js's: decision 0571), timed in
 * process CPU time from the request to the answer, after uncounted warm-up runs on both sides.
 */
export async function runRomLoopBench(options: { repeats?: number; warmUps?: number } = {}): Promise<BenchRow[]> {
  const repeats = options.repeats ?? 300;
  const warmUps = options.warmUps ?? WARM_UP_RUNS;
  const bytes = new Uint8Array(readFileSync(ROM_TEST));
  const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const backend = new SimBackend({ clock: systemClock, onUnmodelled: () => {} });
  const device = await backend.open(pico);
  if (!(device instanceof SimDevice)) throw new Error('the sim backend returned a device that is not a SimDevice');
  const rawThread = RawRp2040jsThread.start();
  const engine = { instructions: 0, simulatedNanos: 0, ms: 0 };
  const raw = { instructions: 0, simulatedNanos: 0, ms: 0 };
  try {
    await device.flash(loadFirmwareImage(bytes));
    for (let i = -warmUps; i < repeats; i++) {
      const counted = i >= 0;
      const before = device.stats;
      await settle();
      const t0 = cpuMs();
      const stop = await device.run(NANOS_PER_SECOND);
      const engineMs = cpuMs() - t0;
      if (stop.reason !== 'exited' || stop.exitCode !== 0) throw new Error(`rom-test on the sim backend did not pass: ${JSON.stringify(stop)}`);
      const after = device.stats;
      await device.reset();
      await rawThread.load(bytes);
      await settle();
      const r0 = cpuMs();
      const run = await rawThread.run();
      const rawMs = cpuMs() - r0;
      if (!counted) continue;
      engine.instructions += after.instructions - before.instructions;
      engine.simulatedNanos += after.simulatedNanos - before.simulatedNanos;
      engine.ms += engineMs;
      raw.instructions += run.instructions;
      raw.simulatedNanos += run.simulatedNanos;
      raw.ms += rawMs;
    }
    const engineRate = engine.instructions / (engine.ms / 1000) / 1e6;
    const rawRate = raw.instructions / (raw.ms / 1000) / 1e6;
    return [
      {
        name: 'sim pico, SDK-style image: instructions per second',
        value: engineRate,
        unit: 'M instr/s',
        note: `rom-test.elf (boot2, ROM lookups, soft float/double calls) to its exit, ${repeats} runs after ${warmUps} uncounted, ${(engine.instructions / repeats / 1e3).toFixed(0)} k instructions each, through SimBackend`,
      },
      { name: 'sim pico, SDK-style image: simulated time / host time', value: engine.simulatedNanos / 1e6 / engine.ms, unit: 'x real time', note: 'a ROM call is charged 20 cycles' },
      {
        name: 'raw rp2040js, same image: instructions per second',
        value: rawRate,
        unit: 'M instr/s',
        note: 'Simulator chip and clock, bare execute/tick loop in a worker thread, ROM entries dispatched to the same functions; alternated with the runs above',
      },
      { name: 'raw rp2040js, same image: simulated time / host time', value: raw.simulatedNanos / 1e6 / raw.ms, unit: 'x real time', note: 'a ROM call takes no simulated time in the raw loop' },
      { name: 'sim pico / raw rp2040js', value: engineRate / rawRate, unit: 'x', note: 'goal >= 0.6; above 1: the engine is faster; below 1: its overhead' },
    ];
  } finally {
    await device.close();
    await rawThread.close();
  }
}
