import { describe, expect, it } from 'vitest';
import type { Board } from '../../boards/board-schema.js';
import { type Backend, BackendError, type Device, type FirmwareImage, NANOS_PER_SECOND } from '../../backends/backend.js';
import { concatUart } from '../../harness/run-firmware.js';

/**
 * The backend contract: one suite, run against every backend (mock, sim, qemu, the Renode
 * stand-in, probe with fakes, and real hardware when an environment variable says where).
 * A backend file under test/contract/ calls `describeBackendContract` with its fixtures.
 */
export interface BackendContractFixtures {
  /** Creates a fresh backend; called once per test. */
  backend: () => Backend | Promise<Backend>;
  board: Board;
  /** Firmware that prints `helloPattern` soon after reset and keeps printing. */
  hello: FirmwareImage;
  helloPattern: RegExp;
  /**
   * Seconds of the device's time base within which `helloPattern` appears: an assertion, so give
   * it only where it is deterministic (a simulated time base) or a stated requirement (a real
   * board's health check). Left out for a wall-time device, whose speed depends on how loaded the
   * host is: the suite then waits for the pattern, bounded by `WALL_WAIT_SECONDS`.
   */
  helloWithinSeconds?: number;
  /** An image the board cannot run (wrong architecture). */
  wrongArchitecture: FirmwareImage;
  /** Firmware that exits with `exitCode`, where the backend can report exits. */
  exits?: { image: FirmwareImage; exitCode: number };
  /** Firmware that crashes (locks up / faults). */
  crashes?: FirmwareImage;
  /** Self-checking programs the board has on top (pico: multicore): each prints `uartPattern` and exits with `exitCode`. */
  selfChecks?: ReadonlyArray<{ program: string; image: FirmwareImage; uartPattern: RegExp; exitCode: number }>;
}

const text = (d: { uart: Uint8Array }) => new TextDecoder().decode(d.uart);

async function withDevice<T>(fixtures: BackendContractFixtures, fn: (device: Device) => Promise<T>): Promise<T> {
  const backend = await fixtures.backend();
  const device = await backend.open(fixtures.board);
  try {
    return await fn(device);
  } finally {
    await device.close();
  }
}

function collect(device: Device) {
  const chunks: Array<{ atNanos: number; bytes: Uint8Array }> = [];
  device.onUart((c) => chunks.push(c));
  return { chunks, get uart() { return concatUart(chunks); } };
}

/**
 * The bound of a wait for output on a wall-time device without `helloWithinSeconds`: only a hang
 * reaches it (QEMU prints its hello within a second here), and two such waits fit within
 * vitest's 30 s test timeout, so a failure names what was awaited.
 */
export const WALL_WAIT_SECONDS = 10;

export function describeBackendContract(name: string, fixtures: BackendContractFixtures): void {
  const timed = fixtures.helloWithinSeconds !== undefined;
  /** Every wait for the hello pattern ends when it appears; this bounds it. */
  const helloNanos = Math.round((fixtures.helloWithinSeconds ?? WALL_WAIT_SECONDS) * NANOS_PER_SECOND);
  /** A run that ends by itself (exit, crash, `until`): generous, it is only a bound. */
  const selfEndingNanos = timed ? helloNanos * 20 : helloNanos;
  /** A run nothing stops: kept short, as its whole length is spent. */
  const wholeRunNanos = Math.min(helloNanos, NANOS_PER_SECOND / 2);
  const sawHello = (seen: { uart: Uint8Array }) => () => fixtures.helloPattern.test(text(seen));

  describe(`backend contract: ${name} on ${fixtures.board.id}`, () => {
    it('reports the board available', async () => {
      const backend = await fixtures.backend();
      await expect(backend.availability(fixtures.board)).resolves.toEqual({ available: true });
    });

    it('flashes, releases reset and captures the first UART bytes with timestamps from reset', async () => {
      await withDevice(fixtures, async (device) => {
        const seen = collect(device);
        await device.flash(fixtures.hello);
        const stop = await device.run(helloNanos, { until: sawHello(seen) });
        expect(['elapsed', 'until']).toContain(stop.reason);
        expect(text(seen)).toMatch(fixtures.helloPattern);
        expect(seen.chunks[0]!.atNanos).toBeGreaterThanOrEqual(0);
        for (let i = 1; i < seen.chunks.length; i++) {
          expect(seen.chunks[i]!.atNanos).toBeGreaterThanOrEqual(seen.chunks[i - 1]!.atNanos);
        }
        expect(stop.elapsedNanos).toBeGreaterThanOrEqual(seen.chunks.at(-1)!.atNanos);
        expect(device.droppedUartBytes).toBe(0);
      });
    });

    it('stops early when `until` holds', async () => {
      await withDevice(fixtures, async (device) => {
        const seen = collect(device);
        await device.flash(fixtures.hello);
        const stop = await device.run(selfEndingNanos, { until: sawHello(seen) });
        expect(stop.reason).toBe('until');
        expect(stop.elapsedNanos).toBeLessThan(selfEndingNanos);
      });
    });

    it('runs for the whole duration when nothing stops it (the bounded wait)', async () => {
      await withDevice(fixtures, async (device) => {
        await device.flash(fixtures.hello);
        const stop = await device.run(wholeRunNanos, { until: () => false });
        expect(stop.reason).toBe('elapsed');
        expect(stop.elapsedNanos).toBeGreaterThanOrEqual(wholeRunNanos);
      });
    });

    it('starts the firmware again from the beginning after reset', async () => {
      await withDevice(fixtures, async (device) => {
        const seen = collect(device);
        await device.flash(fixtures.hello);
        await device.run(helloNanos, { until: sawHello(seen) });
        const firstBoot = text(seen);
        seen.chunks.length = 0;
        await device.reset();
        await device.run(helloNanos, { until: sawHello(seen) });
        expect(text(seen)).toMatch(fixtures.helloPattern);
        expect(seen.chunks[0]!.atNanos).toBeLessThanOrEqual(helloNanos);
        expect(firstBoot.length).toBeGreaterThan(0);
      });
    });

    it('refuses an image of the wrong architecture as bad-image, before running it', async () => {
      await withDevice(fixtures, async (device) => {
        const error = await device.flash(fixtures.wrongArchitecture).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BackendError);
        expect((error as BackendError).kind).toBe('bad-image');
        expect((error as BackendError).message).toMatch(/architecture|machine/i);
      });
    });

    it('is cancelled by its abort signal in the middle of a run', async () => {
      await withDevice(fixtures, async (device) => {
        const controller = new AbortController();
        device.onUart(() => controller.abort(new Error('test cancels on first byte')));
        await device.flash(fixtures.hello);
        const error = await device.run(600 * NANOS_PER_SECOND, { signal: controller.signal }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BackendError);
        expect((error as BackendError).kind).toBe('cancelled');
      });
    });

    it('can be closed twice and refuses use after close', async () => {
      const backend = await fixtures.backend();
      const device = await backend.open(fixtures.board);
      await device.close();
      await device.close();
      await expect(device.flash(fixtures.hello)).rejects.toBeInstanceOf(BackendError);
    });

    it('has pins exactly when it lists pin names for the board (the optional pins capability)', async () => {
      const backend = await fixtures.backend();
      const names = backend.pinNames?.(fixtures.board);
      const device = await backend.open(fixtures.board);
      try {
        expect(device.pins !== undefined, `pinNames ${names ? 'lists names' : 'is undefined'}`).toBe(names !== undefined);
        if (names && device.pins) {
          await device.flash(fixtures.hello);
          for (const name of names) await expect(device.pins.read(name)).resolves.toMatchObject({ level: expect.any(Number) });
        }
      } finally {
        await device.close();
      }
    });

    if (fixtures.exits) {
      const { image, exitCode } = fixtures.exits;
      it(`reports the firmware's own exit status (${exitCode})`, async () => {
        await withDevice(fixtures, async (device) => {
          await device.flash(image);
          const stop = await device.run(selfEndingNanos);
          expect(stop).toMatchObject({ reason: 'exited', exitCode });
        });
      });
    }

    for (const check of fixtures.selfChecks ?? []) {
      it(`runs the self-checking program ${check.program}: its output, then its exit status (${check.exitCode})`, async () => {
        await withDevice(fixtures, async (device) => {
          const output = collect(device);
          await device.flash(check.image);
          const stop = await device.run(selfEndingNanos);
          expect(text(output)).toMatch(check.uartPattern);
          expect(stop).toMatchObject({ reason: 'exited', exitCode: check.exitCode });
        });
      });
    }

    if (fixtures.crashes) {
      const crashes = fixtures.crashes;
      it('reports a crash as a stop with a message, not as a hang', async () => {
        await withDevice(fixtures, async (device) => {
          await device.flash(crashes);
          const stop = await device.run(selfEndingNanos);
          expect(stop.reason).toBe('crashed');
          expect(stop.reason === 'crashed' && stop.message.length).toBeGreaterThan(0);
        });
      });
    }
  });
}
