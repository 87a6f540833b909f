import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { UartChunk } from '../../../backends/backend.js';
import { SimBackend } from '../../../backends/sim/sim-backend.js';
import type { SimDevice } from '../../../backends/sim/sim-device.js';
import { startInProcessTarget } from '../../../bin/run-command.js';
import { loadBoardCatalog } from '../../../boards/catalog.js';
import { systemClock } from '../../../core/clock.js';
import { parseScenario } from '../../../harness/scenario/load-scenario.js';
import { describeFailure, runScenario } from '../../../harness/scenario/run-scenario.js';
import { firmwareImage } from '../../../test/support/make-elf.js';
import { type ArduinoSketchBaud, arduinoSketchBauds, arduinoSketchElf, buildArduinoSketches } from './arduino-sketch.js';

/**
 * arduino-serial.ino, built against Debian's Arduino core, on the uno simulator (avr8js). Every
 * time here is simulated time: chunk timestamps are when a line's first start bit went out.
 * Listed in test/host-tool-suites.ts: left out where arduino-core-avr is missing, run in CI.
 */

const uno = loadBoardCatalog().find((b) => b.id === 'uno')!;
const F_CPU_HZ = 16_000_000;
/** 8N1: start bit, eight data bits, stop bit. */
const BITS_PER_BYTE = 10;
const BANNER = (baud: number) => `hilbench arduino board=uno baud=${baud}\r\n`;
const BURST_LINE = '0123456789abcdefghijklmnopqrstuvwxyz\r\n';
const BURST_LINES = 8;
const TICK_MS = 100;
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/**
 * The baud rate the Arduino core really programs: HardwareSerial::begin sets U2X0 and
 * UBRR0 = (F_CPU / 4 / baud - 1) / 2, rounded down (ATmega328P datasheet §20.3.1 for the rate).
 * At 9600 that is 9615 baud (+0.16 %); at 115200 it is 117647 (+2.1 %), on a real Uno as here.
 */
function arduinoBaud(baud: number): number {
  const ubrr = Math.floor((F_CPU_HZ / 4 / baud - 1) / 2);
  return F_CPU_HZ / (8 * (ubrr + 1));
}

let sketchDir: string;
beforeAll(() => {
  sketchDir = buildArduinoSketches();
}, 120_000);

async function flashSketch(baud: ArduinoSketchBaud): Promise<{ device: SimDevice; chunks: UartChunk[] }> {
  const backend = new SimBackend({
    clock: systemClock,
    onUnmodelled: (message) => {
      throw new Error(`the Arduino core touched a register the simulator does not model: ${message}`);
    },
  });
  const device = (await backend.open(uno)) as SimDevice;
  await device.flash(firmwareImage(new Uint8Array(readFileSync(arduinoSketchElf(sketchDir, 'arduino-serial', baud)))));
  const chunks: UartChunk[] = [];
  device.onUart((chunk) => chunks.push(chunk));
  return { device, chunks };
}

/**
 * The UART output as lines, each stamped with its first byte's time. Chunks close at a line feed,
 * so every line starts a chunk; a line may be split over several chunks at slice ends.
 */
function lines(chunks: UartChunk[]): { atNanos: number; text: string }[] {
  const out: { atNanos: number; text: string }[] = [];
  let open: { atNanos: number; text: string } | undefined;
  for (const chunk of chunks) {
    open ??= { atNanos: chunk.atNanos, text: '' };
    open.text += text(chunk.bytes);
    if (open.text.endsWith('\n')) {
      out.push(open);
      open = undefined;
    }
  }
  if (open) out.push(open);
  return out;
}

describe('an Arduino-core sketch on the uno simulator', () => {
  for (const baud of arduinoSketchBauds) {
    it(`sends Serial at ${baud} baud with every line starting at its baud-accurate time (within 1 %)`, async () => {
      const { device, chunks } = await flashSketch(baud);
      const burstNanos = ((BANNER(baud).length + BURST_LINES * BURST_LINE.length) * BITS_PER_BYTE * 1e9) / arduinoBaud(baud);
      const stop = await device.run(Math.ceil(burstNanos * 1.05));
      expect(stop.reason).toBe('elapsed');
      const sent = lines(chunks);
      expect(sent.slice(0, 1 + BURST_LINES).map((l) => l.text)).toEqual([BANNER(baud), ...Array<string>(BURST_LINES).fill(BURST_LINE)]);
      // Each line starts when the bytes before it have gone out, back to back, 10 bits a byte.
      const start = sent[0]!.atNanos;
      let bytesBefore = 0;
      for (const line of sent.slice(1, 1 + BURST_LINES)) {
        bytesBefore += line === sent[1] ? BANNER(baud).length : BURST_LINE.length;
        const baudAccurateNanos = (bytesBefore * BITS_PER_BYTE * 1e9) / arduinoBaud(baud);
        expect(Math.abs(line.atNanos - start - baudAccurateNanos) / baudAccurateNanos, `line at ${line.atNanos} ns`).toBeLessThan(0.01);
      }
      await device.close();
    });
  }

  it('keeps millis() and delay() on timer0: a tick every 100 ms whose millis() matches simulated time', async () => {
    const { device, chunks } = await flashSketch(115200);
    await device.run(1_050_000_000);
    const ticks = lines(chunks)
      .map((l) => ({ atNanos: l.atNanos, match: /^tick (\d+) millis=(\d+)\r\n$/.exec(l.text) }))
      .filter((t) => t.match !== null)
      .map((t) => ({ atMs: t.atNanos / 1e6, n: Number(t.match![1]), millis: Number(t.match![2]) }));
    expect(ticks.length).toBeGreaterThanOrEqual(9);
    expect(ticks.map((t) => t.n)).toEqual(ticks.map((_, i) => i + 1));
    for (const tick of ticks) {
      // millis() is read a few microseconds after the line's first byte went out; it counts whole ms.
      expect(tick.millis, `tick ${tick.n} at ${tick.atMs} ms`).toBeGreaterThanOrEqual(Math.floor(tick.atMs) - 1);
      expect(tick.millis, `tick ${tick.n} at ${tick.atMs} ms`).toBeLessThanOrEqual(Math.ceil(tick.atMs) + 1);
    }
    // delay(100) plus a loop that queues a line: one tick per 100 ms, within 1 %.
    const spacingMs = (ticks.at(-1)!.atMs - ticks[0]!.atMs) / (ticks.length - 1);
    expect(Math.abs(spacingMs - TICK_MS) / TICK_MS).toBeLessThan(0.01);
    expect(device.stats.sleptNanos).toBe(0);
    await device.close();
  });

  for (const baud of arduinoSketchBauds) {
    it(`echoes Serial input written to the device at ${baud} baud`, async () => {
      const { device, chunks } = await flashSketch(baud);
      await device.run(400_000_000);
      const writtenAtNanos = 400_000_000;
      await device.writeUart(new TextEncoder().encode('hello uno\n'));
      await device.run(700_000_000, { until: () => lines(chunks).some((l) => l.text.startsWith('echo:') && l.text.endsWith('\n')) });
      const echo = lines(chunks).find((l) => l.text.startsWith('echo:'));
      expect(echo?.text).toBe('echo: hello uno\r\n');
      // Received one character time apart, then echoed by the next loop(): within one tick.
      const receivedNanos = (10 * BITS_PER_BYTE * 1e9) / arduinoBaud(baud);
      expect(echo!.atNanos).toBeGreaterThan(writtenAtNanos + receivedNanos);
      expect(echo!.atNanos).toBeLessThan(writtenAtNanos + receivedNanos + (TICK_MS + 5) * 1e6);
      expect(device.droppedUartBytes).toBe(0);
      await device.close();
    });
  }

  it('echoes Serial input sent by a scenario write-serial step', async () => {
    const scenario = parseScenario(
      [
        'version: 1',
        'name: Arduino sketch echoes serial input',
        'board: uno',
        'clock: simulated',
        'timeout: 2s',
        'steps:',
        '  - device-flash: { firmware: "${sketch}" }',
        '  - wait-serial: { text: "hilbench arduino board=uno baud=9600" }',
        '  - wait-serial: { text: "tick 1 millis=" }',
        '  - write-serial: "from a scenario\\n"',
        '  - wait-serial: { text: "echo: from a scenario\\r\\n", timeout: 300ms }',
      ].join('\n'),
      'arduino-echo.yaml',
    );
    const { target, close } = await startInProcessTarget({ backend: 'sim' });
    try {
      const result = await runScenario(scenario, target, { vars: { sketch: arduinoSketchElf(sketchDir, 'arduino-serial', 9600) } });
      expect(result.status, describeFailure(result)).toBe('passed');
    } finally {
      await close();
    }
  });
});
