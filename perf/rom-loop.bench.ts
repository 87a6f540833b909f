import { readFileSync } from 'node:fs';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { SimDevice } from '../backends/sim/sim-device.js';
import { NANOS_PER_SECOND } from '../backends/backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { type BenchRow, cpuMs } from './measure.js';
import { rawRp2040jsChip, rawRp2040jsRun, settle } from './raw-rp2040js.js';

const ROM_TEST = new URL('../scenarios/firmware/pico/rom-test.elf', import.meta.url);
/**
 * Instructions per second of an SDK-style image (boot2 stage, ROM lookups, soft float and double
 * calls: scenarios/firmware/pico/rom-test.elf, run to its exit again and again) on the sim
 * backend, against the same image's instruction stream on raw rp2040js, measured in the same run
 * for the same number of repetitions, alternating, so both see the same machine load.
 */
export async function runRomLoopBench(options: { repeats?: number } = {}): Promise<BenchRow[]> {
  const repeats = options.repeats ?? 300;
  const bytes = new Uint8Array(readFileSync(ROM_TEST));
  const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const backend = new SimBackend({ clock: systemClock, onUnmodelled: () => {} });
  const device = await backend.open(pico);
  if (!(device instanceof SimDevice)) throw new Error('the sim backend returned a device that is not a SimDevice');
  const rom = new OwnBootrom();
  let engineMs = 0;
  let rawMs = 0;
  let rawInstructions = 0;
  try {
    await device.flash(loadFirmwareImage(bytes));
    for (let i = 0; i < repeats; i++) {
      await settle();
      const t0 = cpuMs();
      const stop = await device.run(NANOS_PER_SECOND);
      engineMs += cpuMs() - t0;
      if (stop.reason !== 'exited' || stop.exitCode !== 0) throw new Error(`rom-test on the sim backend did not pass: ${JSON.stringify(stop)}`);
      await device.reset();
      const chip = rawRp2040jsChip(bytes, rom);
      await settle();
      const raw = rawRp2040jsRun(chip, rom);
      rawInstructions += raw.instructions;
      rawMs += raw.hostMs;
    }
    const engineInstructions = device.stats.instructions;
    const engineRate = engineInstructions / (engineMs / 1000) / 1e6;
    const rawRate = rawInstructions / (rawMs / 1000) / 1e6;
    return [
      {
        name: 'sim pico, SDK-style image: instructions per second',
        value: engineRate,
        unit: 'M instr/s',
        note: `rom-test.elf (boot2, ROM lookups, soft float/double calls) to its exit, ${repeats} runs, ${(engineInstructions / repeats / 1e3).toFixed(0)} k instructions each, through SimBackend`,
      },
      {
        name: 'raw rp2040js, same image: instructions per second',
        value: rawRate,
        unit: 'M instr/s',
        note: 'Simulator chip and clock, bare execute/tick loop, ROM entries dispatched to the same functions; alternated with the runs above',
      },
      { name: 'sim pico / raw rp2040js', value: engineRate / rawRate, unit: 'x', note: 'above 1: the engine is faster; below 1: its overhead' },
    ];
  } finally {
    await device.close();
  }
}
