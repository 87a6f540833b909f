import { describe, expect, it } from 'vitest';
import { runEngine } from './run-engine.js';
import type { EngineHalt, EngineUartChunk, SimEngine } from './sim-engine.js';
import { UartOutputBuffer } from './uart-output-buffer.js';

/**
 * A scripted engine: time advances in 1 µs steps, it prints `lines` at given times, may halt at
 * a given time, and may report itself asleep for ever.
 */
class ScriptedEngine implements SimEngine {
  readonly clockHz = 1_000_000;
  nanos = 0;
  instructions = 0;
  sleptNanos = 0;
  droppedRxBytes = 0;
  pendingRxBytes = 0;
  asleepForever = false;
  /** A chip without pins: the run loop never touches them. */
  readonly pins = { names: [], read: () => ({ level: 0 as const, driver: 'floating' as const }), drive: () => undefined };
  advanceCalls: number[] = [];
  private readonly tx = new UartOutputBuffer();

  constructor(
    private readonly lines: Array<{ atNanos: number; text: string }> = [],
    private readonly haltAt?: { atNanos: number; halt: EngineHalt },
  ) {}

  advance(targetNanos: number): EngineHalt | undefined {
    this.advanceCalls.push(targetNanos);
    // Asleep with nothing to wake it, a chip's time jumps (as rp2040js's and avr8js's do), instead
    // of 600 million steps of 1 µs (5 s of this test's CPU, 33 s on a loaded machine).
    if (this.asleepForever) {
      this.nanos = Math.max(this.nanos, targetNanos);
      return undefined;
    }
    while (this.nanos < targetNanos) {
      if (this.haltAt && this.nanos >= this.haltAt.atNanos) return this.haltAt.halt;
      const line = this.lines.find((l) => l.atNanos === this.nanos);
      this.nanos += 1000;
      this.instructions++;
      if (line) {
        let ready = false;
        for (const b of new TextEncoder().encode(line.text)) ready = this.tx.push(b, line.atNanos) || ready;
        if (ready) return undefined;
      }
    }
    return undefined;
  }

  takeUartOutput(options: { partial: boolean }): EngineUartChunk | undefined {
    return this.tx.take(options);
  }

  queueUartInput(): void {}
}

const MS = 1_000_000;

describe('runEngine', () => {
  it('runs to the end in slices, yielding to the host between them', async () => {
    const engine = new ScriptedEngine();
    let yields = 0;
    const stop = await runEngine(engine, { endNanos: 10 * MS, sliceNanos: MS, onUart: () => {}, yieldToHost: async () => void yields++ });
    expect(stop).toEqual({ reason: 'elapsed', elapsedNanos: 10 * MS });
    expect(engine.advanceCalls).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((k) => k * MS));
    expect(yields).toBe(9);
  });

  it('is cancelled between slices when the signal fires during a yield', async () => {
    const engine = new ScriptedEngine();
    const controller = new AbortController();
    let yields = 0;
    const stop = await runEngine(engine, {
      endNanos: 600_000 * MS,
      sliceNanos: MS,
      signal: controller.signal,
      onUart: () => {},
      yieldToHost: async () => {
        if (++yields === 3) controller.abort();
      },
    });
    expect(stop).toEqual({ reason: 'cancelled', elapsedNanos: 3 * MS });
  });

  it('checks `until` right after a UART line, not only at the slice end', async () => {
    const engine = new ScriptedEngine([
      { atNanos: 250_000, text: 'boot\n' },
      { atNanos: 500_000, text: 'ready\n' },
      { atNanos: 700_000, text: 'late\n' },
    ]);
    let seen = '';
    const stop = await runEngine(engine, {
      endNanos: 10 * MS,
      sliceNanos: MS,
      onUart: (c) => void (seen += new TextDecoder().decode(c.bytes)),
      until: () => seen.includes('ready'),
    });
    expect(stop).toEqual({ reason: 'until', elapsedNanos: 501_000 });
    expect(seen).toBe('boot\nready\n');
  });

  it('checks `until` at slice ends even when nothing is printed', async () => {
    const engine = new ScriptedEngine();
    let calls = 0;
    const stop = await runEngine(engine, { endNanos: 10 * MS, sliceNanos: MS, onUart: () => {}, until: () => ++calls === 4 });
    expect(stop).toEqual({ reason: 'until', elapsedNanos: 4 * MS });
  });

  it('hands out output left in the buffer before reporting a halt', async () => {
    const engine = new ScriptedEngine([{ atNanos: 1000, text: 'bye' }], { atNanos: 5000, halt: { reason: 'exited', exitCode: 2 } });
    const chunks: EngineUartChunk[] = [];
    const stop = await runEngine(engine, { endNanos: MS, onUart: (c) => chunks.push(c) });
    expect(stop).toEqual({ reason: 'exited', exitCode: 2, elapsedNanos: 5000 });
    expect(chunks.map((c) => [c.atNanos, new TextDecoder().decode(c.bytes)])).toEqual([[1000, 'bye']]);
  });

  it('jumps to the end of the run in one step when the core sleeps with nothing to wake it', async () => {
    const engine = new ScriptedEngine();
    engine.asleepForever = true;
    let yields = 0;
    const stop = await runEngine(engine, { endNanos: 600_000 * MS, sliceNanos: MS, onUart: () => {}, yieldToHost: async () => void yields++ });
    expect(stop.reason).toBe('elapsed');
    expect(engine.advanceCalls).toEqual([600_000 * MS]);
    expect(yields).toBe(0);
  });
});
