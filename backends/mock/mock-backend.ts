import type { Board } from '../../boards/board-schema.js';
import { loadableSegments, sectionBytes } from '../../core/elf.js';
import {
  type Availability,
  type Backend,
  BackendError,
  type Device,
  type DeviceDebug,
  type FirmwareImage,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
  type UartChunk,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { UartFanout } from '../uart-fanout.js';

/**
 * The mock backend: instant and deterministic. It runs every board without executing anything,
 * and prints a documented transcript (docs/backends/mock.md) that tests can assert:
 *
 *   hilbench-mock: reset <board id>\r\n                      at 0 ns
 *   hilbench-mock: image sha256=<hex> entry=0x<hex> segments=<n>\r\n   at 0 ns
 *   hilbench-mock: tick <k>\r\n                               at k * 100 ms, k = 1, 2, ...
 *
 * Time is simulated: `run(d)` returns at once, having "run" for `d` nanoseconds.
 *
 * Faults are injected per board through the constructor or per image through an ELF section
 * named `.hilbench.mock` holding `fault=<fault>` (so a fault can travel through the HTTP API).
 */
export const mockFaults = ['flash-fail', 'flash-hang', 'run-hang', 'garble', 'crash', 'exit'] as const;
export type MockFault = (typeof mockFaults)[number];

export const MOCK_TICK_NANOS = 100_000_000;

export interface MockBackendOptions {
  /** Faults applied to every image on these boards, by board id. */
  faults?: Record<string, MockFault>;
  /** Boards reported unavailable, with the reason, to exercise the offline path. */
  unavailable?: Record<string, string>;
}

export class MockBackend implements Backend {
  readonly name = 'mock' as const;
  constructor(private readonly options: MockBackendOptions = {}) {}

  async availability(board: Board): Promise<Availability> {
    const reason = this.options.unavailable?.[board.id];
    return reason ? { available: false, reason } : { available: true };
  }

  async open(board: Board): Promise<Device> {
    const reason = this.options.unavailable?.[board.id];
    if (reason) throw new BackendError('unavailable', `board ${board.id} is not available on the mock backend: ${reason}`);
    return new MockDevice(board, this.options.faults?.[board.id]);
  }
}

const encoder = new TextEncoder();

/** Reads `fault=<name>` from the image's `.hilbench.mock` section, if any. */
export function faultFromImage(image: FirmwareImage): MockFault | undefined {
  const raw = sectionBytes(image.bytes, image.elf, '.hilbench.mock');
  if (!raw) return undefined;
  const match = /fault=([a-z-]+)/.exec(new TextDecoder().decode(raw));
  const fault = match?.[1];
  return mockFaults.find((f) => f === fault);
}

class MockDevice implements Device {
  readonly timeBase = 'simulated' as const;
  readonly droppedUartBytes = 0;
  /** The debug capability, refused in words that say why and where to go instead. */
  readonly debug: DeviceDebug = {
    attach: async () => {
      throw new BackendError(
        'unavailable',
        `board ${this.board.id} runs on the mock backend, which executes no firmware (it prints a fixed transcript), so there is nothing to debug: ` +
          'use a backend that runs it (sim for pico and uno, qemu, renode, or probe for a real board)',
      );
    },
  };
  private readonly uart = new UartFanout();
  private image: FirmwareImage | undefined;
  private fault: MockFault | undefined;
  /** Nanoseconds since reset release; undefined while held in reset. */
  private elapsedNanos: number | undefined;
  private closed = false;

  constructor(
    readonly board: Board,
    private readonly boardFault: MockFault | undefined,
  ) {}

  async flash(image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    this.assertOpen();
    throwIfCancelled(options.signal, 'flash');
    checkImageForBoard(image, this.board);
    const fault = this.boardFault ?? faultFromImage(image);
    if (fault === 'flash-fail') {
      throw new BackendError('flash-failed', 'mock flash failed (injected fault flash-fail)', {
        exitCode: 1,
        outputTail: '** Programming Failed ** (mock)',
      });
    }
    if (fault === 'flash-hang') await hangUntilAborted(options.signal, 'flash');
    this.image = image;
    this.fault = fault;
    this.elapsedNanos = undefined;
  }

  onUart(listener: (chunk: UartChunk) => void): () => void {
    return this.uart.subscribe(listener);
  }

  async run(durationNanos: number, options: RunOptions = {}): Promise<RunStop> {
    this.assertOpen();
    throwIfCancelled(options.signal, 'run');
    const image = this.image;
    if (!image) throw new BackendError('bad-image', 'run called before flash: no firmware loaded');
    if (this.fault === 'run-hang') await hangUntilAborted(options.signal, 'run');

    const fromNanos = this.elapsedNanos ?? -1;
    if (this.elapsedNanos === undefined) {
      this.elapsedNanos = 0;
      this.emit(0, `hilbench-mock: reset ${this.board.id}\r\n`);
      this.emit(
        0,
        `hilbench-mock: image sha256=${image.sha256} entry=0x${image.elf.entry.toString(16)} segments=${loadableSegments(image.elf).length}\r\n`,
      );
      throwIfCancelled(options.signal, 'run');
      if (options.until?.()) return { reason: 'until', elapsedNanos: 0 };
      if (this.fault === 'crash') return { reason: 'crashed', message: 'mock core locked up (injected fault crash)', elapsedNanos: 0 };
      if (this.fault === 'exit') return { reason: 'exited', exitCode: 3, elapsedNanos: 0 };
    }
    const endNanos = Math.max(durationNanos, this.elapsedNanos);
    for (let k = Math.floor(fromNanos / MOCK_TICK_NANOS) + 1; k * MOCK_TICK_NANOS <= endNanos; k++) {
      if (k === 0) continue;
      throwIfCancelled(options.signal, 'run');
      const atNanos = k * MOCK_TICK_NANOS;
      this.elapsedNanos = atNanos;
      if (this.fault === 'garble') this.emitBytes(atNanos, garbage(image.sha256, k));
      else this.emit(atNanos, `hilbench-mock: tick ${k}\r\n`);
      if (options.until?.()) return { reason: 'until', elapsedNanos: atNanos };
    }
    this.elapsedNanos = endNanos;
    return { reason: 'elapsed', elapsedNanos: endNanos };
  }

  async writeUart(bytes: Uint8Array): Promise<void> {
    this.assertOpen();
    // The mock firmware echoes what it receives, so write-serial steps have something to expect.
    this.emitBytes(this.elapsedNanos ?? 0, bytes);
  }

  async reset(): Promise<void> {
    this.assertOpen();
    this.elapsedNanos = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.uart.clear();
  }

  private assertOpen() {
    if (this.closed) throw new BackendError('internal', `mock device for ${this.board.id} used after close`);
  }

  private emit(atNanos: number, text: string) {
    this.emitBytes(atNanos, encoder.encode(text));
  }

  private emitBytes(atNanos: number, bytes: Uint8Array) {
    this.uart.emit({ atNanos, bytes });
  }
}

/** Deterministic non-text bytes (invalid UTF-8 included) derived from the image hash and tick. */
function garbage(sha256: string, tick: number): Uint8Array {
  let state = (parseInt(sha256.slice(0, 8), 16) ^ tick) >>> 0 || 1;
  const out = new Uint8Array(16);
  for (let i = 0; i < out.length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = (state >>> 0) & 0xff | 0x80;
  }
  return out;
}

function hangUntilAborted(signal: AbortSignal | undefined, what: string): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new BackendError('cancelled', `${what} cancelled (mock hang)`, { cause: signal?.reason }));
    if (signal?.aborted) fail();
    signal?.addEventListener('abort', fail, { once: true });
  });
}
