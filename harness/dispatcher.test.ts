import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import type { Board } from '../boards/board-schema.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { type Backend, BackendError, type Device, type FirmwareImage } from '../backends/backend.js';
import { MockBackend } from '../backends/mock/mock-backend.js';
import { clockFromFakeTimers } from '../core/clock.js';
import { firmwareImage, makeElf, picoTestElf } from '../test/support/make-elf.js';
import { type JobPhase, LocalDispatcher, type UartSoFar } from './dispatcher.js';
import { concatUart } from './run-firmware.js';

const boards = loadBoardCatalog();
const pico = boards.find((b) => b.id === 'pico')!;
const uno = boards.find((b) => b.id === 'uno')!;
const hello = firmwareImage(makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(32) }] }));
const withFault = (fault: string) => firmwareImage(picoTestElf({ fault, sizeBytes: 32 }));

/** Lets the event loop run the promise chains a fake clock does not drive. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

/** A backend whose flash waits until the test releases it; records the order of events. */
class GatedBackend implements Backend {
  readonly name = 'mock' as const;
  readonly events: string[] = [];
  private readonly gates = new Map<string, () => void>();
  constructor(private readonly ignoreAbort = false) {}
  async availability() {
    return { available: true as const };
  }
  openGate(tag: string) {
    this.gates.get(tag)?.();
  }
  async open(board: Board): Promise<Device> {
    const { events, gates, ignoreAbort } = this;
    return {
      board,
      timeBase: 'simulated',
      droppedUartBytes: 0,
      async flash(image: FirmwareImage, options?: { signal?: AbortSignal }) {
        const tag = `${board.id}:${image.sha256.slice(0, 6)}`;
        events.push(`flash ${tag}`);
        await new Promise<void>((resolve, reject) => {
          gates.set(tag, resolve);
          if (!ignoreAbort) options?.signal?.addEventListener('abort', () => reject(new BackendError('cancelled', 'flash cancelled')));
        });
        events.push(`flashed ${tag}`);
      },
      onUart: () => () => undefined,
      async run() {
        return { reason: 'elapsed', elapsedNanos: 0 };
      },
      async writeUart() {},
      async reset() {},
      async close() {
        events.push(`close ${board.id}`);
      },
    };
  }
}

describe('LocalDispatcher', () => {
  it('runs a job on the mock and reports the phases in order', async () => {
    const fake = createClock(0);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake) });
    const phases: JobPhase[] = [];
    const run = await dispatcher.dispatch({
      jobId: 'j1',
      board: pico,
      backend: new MockBackend(),
      image: hello,
      uartSeconds: 0.25,
      maxUartBytes: 1 << 16,
      onPhase: (p) => {
        phases.push(p);
      },
    });
    expect(phases).toEqual(['flashing', 'running']);
    const text = new TextDecoder().decode(concatUart(run.uart));
    expect(text).toBe(
      `hilbench-mock: reset pico\r\nhilbench-mock: image sha256=${hello.sha256} entry=0x10000009 segments=1\r\nhilbench-mock: tick 1\r\nhilbench-mock: tick 2\r\n`,
    );
    expect(run.stop).toEqual({ reason: 'elapsed', elapsedNanos: 250_000_000 });
    await dispatcher.close();
  });

  it('runs jobs on one board in order, one at a time, while other boards run in parallel', async () => {
    const fake = createClock(0);
    const backend = new GatedBackend();
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake) });
    const a = firmwareImage(makeElf({ entry: 0x11 }));
    const b = firmwareImage(makeElf({ entry: 0x21 }));
    const req = (jobId: string, board: Board, image: FirmwareImage) => ({ jobId, board, backend, image, uartSeconds: 0.1, maxUartBytes: 100 });
    const first = dispatcher.dispatch(req('1', pico, a));
    const second = dispatcher.dispatch(req('2', pico, b));
    const other = dispatcher.dispatch(req('3', uno, a));
    await settle();
    expect(backend.events).toEqual([`flash pico:${a.sha256.slice(0, 6)}`, `flash uno:${a.sha256.slice(0, 6)}`]);
    expect(dispatcher.waiting('pico')).toBe(1);
    backend.openGate(`pico:${a.sha256.slice(0, 6)}`);
    await first;
    await settle();
    expect(backend.events.slice(2)).toEqual([`flashed pico:${a.sha256.slice(0, 6)}`, 'close pico', `flash pico:${b.sha256.slice(0, 6)}`]);
    backend.openGate(`pico:${b.sha256.slice(0, 6)}`);
    backend.openGate(`uno:${a.sha256.slice(0, 6)}`);
    await Promise.all([second, other]);
    await dispatcher.close();
  });

  it('fails a hung flash with kind timeout once the deadline passes on the clock, naming what it waited for', async () => {
    const fake = createClock(0);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake), flashTimeoutMs: 1_000, runMsPerUartSecond: 1_000, marginMs: 500 });
    expect(dispatcher.deadlineMs(0.5)).toBe(2_000);
    const job = dispatcher.dispatch({ jobId: 'hang', board: pico, backend: new MockBackend(), image: withFault('flash-hang'), uartSeconds: 0.5, maxUartBytes: 100 });
    const outcome = job.then(
      () => undefined,
      (err: unknown) => err,
    );
    await settle();
    fake.tick(1_999);
    await settle();
    let done = false;
    void outcome.then(() => (done = true));
    await settle();
    expect(done).toBe(false);
    fake.tick(1);
    const err = await outcome;
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).kind).toBe('timeout');
    expect((err as BackendError).message).toMatch(/did not finish within 2000 ms .*waiting for mock to open and flash pico/);
    await dispatcher.close();
  });

  it('names the UART capture when a run hangs', async () => {
    const fake = createClock(0);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake), flashTimeoutMs: 100, marginMs: 0 });
    const outcome = dispatcher
      .dispatch({ jobId: 'rh', board: pico, backend: new MockBackend(), image: withFault('run-hang'), uartSeconds: 1, maxUartBytes: 100 })
      .catch((err: unknown) => err);
    await settle();
    fake.tick(4_100);
    const err = (await outcome) as BackendError;
    expect(err.kind).toBe('timeout');
    expect(err.message).toMatch(/waiting for 1 s of UART capture on mock/);
    await dispatcher.close();
  });

  it('settles a job whose backend ignores the abort, and holds the board for the grace period only', async () => {
    const fake = createClock(0);
    const backend = new GatedBackend(true);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake), flashTimeoutMs: 100, marginMs: 0, abortGraceMs: 1_000 });
    const a = firmwareImage(makeElf({ entry: 0x31 }));
    const b = firmwareImage(makeElf({ entry: 0x41 }));
    const stuck = dispatcher.dispatch({ jobId: 's', board: pico, backend, image: a, uartSeconds: 0, maxUartBytes: 1 }).catch((e: unknown) => e);
    const next = dispatcher.dispatch({ jobId: 'n', board: pico, backend, image: b, uartSeconds: 0, maxUartBytes: 1 });
    await settle();
    fake.tick(100);
    expect(((await stuck) as BackendError).kind).toBe('timeout');
    await settle();
    expect(backend.events).toEqual([`flash pico:${a.sha256.slice(0, 6)}`]);
    fake.tick(1_000);
    await settle();
    expect(backend.events).toEqual([`flash pico:${a.sha256.slice(0, 6)}`, `flash pico:${b.sha256.slice(0, 6)}`]);
    backend.openGate(`pico:${b.sha256.slice(0, 6)}`);
    await next;
    await dispatcher.close();
  });

  it('cancels queued and running jobs on close, and refuses new ones after', async () => {
    const fake = createClock(0);
    const backend = new GatedBackend();
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake) });
    const running = dispatcher.dispatch({ jobId: 'r', board: pico, backend, image: hello, uartSeconds: 0, maxUartBytes: 1 }).catch((e: unknown) => e);
    const queued = dispatcher.dispatch({ jobId: 'q', board: pico, backend, image: hello, uartSeconds: 0, maxUartBytes: 1 }).catch((e: unknown) => e);
    await settle();
    expect(dispatcher.cancel('nope', 'test')).toBe(false);
    await dispatcher.close();
    expect(((await running) as BackendError).kind).toBe('cancelled');
    expect(((await queued) as BackendError).message).toMatch(/job q cancelled before it started/);
    await expect(dispatcher.dispatch({ jobId: 'late', board: pico, backend, image: hello, uartSeconds: 0, maxUartBytes: 1 })).rejects.toThrow(/closed/);
  });

  it('cancels one queued job by id', async () => {
    const fake = createClock(0);
    const backend = new GatedBackend();
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake) });
    const first = dispatcher.dispatch({ jobId: 'a', board: pico, backend, image: hello, uartSeconds: 0, maxUartBytes: 1 });
    const second = dispatcher.dispatch({ jobId: 'b', board: pico, backend, image: hello, uartSeconds: 0, maxUartBytes: 1 }).catch((e: unknown) => e);
    await settle();
    expect(dispatcher.cancel('b', 'the caller gave up')).toBe(true);
    expect(((await second) as BackendError).message).toBe('job b cancelled before it started: the caller gave up');
    backend.openGate(`pico:${hello.sha256.slice(0, 6)}`);
    await first;
    await dispatcher.close();
  });

  it("never undercuts a backend's own job budget, so its tool timeout fires first; the deadline abort says it was the deadline", async () => {
    const fake = createClock(0);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake), flashTimeoutMs: 1_000, runMsPerUartSecond: 1_000, marginMs: 500 });
    const budget = { flashMs: 127_000, resetMs: 17_000 };
    // flash: the backend's 127 s over the dispatcher's 1 s; run: 17 s of reset over 2 s of UART.
    expect(dispatcher.deadlineMs(2, budget)).toBe(127_000 + 17_000 + 500);
    expect(dispatcher.deadlineMs(30, budget)).toBe(127_000 + 30_000 + 500);
    expect(dispatcher.deadlineMs(2)).toBe(1_000 + 2_000 + 500);

    // A hung flash on a backend stating a 127 s flash budget is not stopped at the default 3.5 s.
    const gated = new GatedBackend();
    const backend: Backend = { name: 'probe', availability: () => gated.availability(), open: (b) => gated.open(b), jobBudgetMs: () => budget };
    const outcome = dispatcher.dispatch({ jobId: 'budget', board: pico, backend, image: hello, uartSeconds: 2, maxUartBytes: 100 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    let done = false;
    void outcome.then(() => (done = true));
    await settle();
    fake.tick(144_499);
    await settle();
    expect(done).toBe(false);
    fake.tick(1);
    const err = await outcome;
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).kind).toBe('timeout');
    expect((err as BackendError).message).toMatch(/stopped by its deadline: it did not finish within 144500 ms \(flash budget 127000 ms \(the probe backend's own/);
    await dispatcher.close();
  });

  it('tells onUart what the run captured so far, kept by the same limit as the run and with the rest counted', async () => {
    const fake = createClock(0);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake) });
    let soFar: UartSoFar | undefined;
    let calls = 0;
    const run = await dispatcher.dispatch({
      jobId: 'u',
      board: pico,
      backend: new MockBackend(),
      image: hello,
      uartSeconds: 0.3,
      maxUartBytes: 40,
      onUart: (s) => {
        soFar = s;
        calls++;
      },
    });
    // Every chunk is told, the ones past the limit too (they count as dropped).
    expect(calls).toBe(5);
    expect(soFar).toMatchObject({ timeBase: 'simulated', uartBytes: 40, droppedUartBytes: run.droppedUartBytes });
    expect(run.droppedUartBytes).toBeGreaterThan(0);
    expect(concatUart([...soFar!.uart])).toEqual(concatUart(run.uart));
    await dispatcher.close();
  });

  it('leaves a cancelled job\'s caller what it printed before the cancel, and tells nothing after it settled', async () => {
    const fake = createClock(0);
    const dispatcher = new LocalDispatcher({ clock: clockFromFakeTimers(fake), abortGraceMs: 1_000 });
    let emit: ((text: string) => void) | undefined;
    // Prints when told, and ignores its abort signal (a backend still printing after the cancel).
    const chatty: Backend = {
      name: 'mock',
      availability: async () => ({ available: true }),
      open: async (board) => {
        const listeners = new Set<(chunk: { atNanos: number; bytes: Uint8Array }) => void>();
        emit = (text) => listeners.forEach((l) => l({ atNanos: 0, bytes: new TextEncoder().encode(text) }));
        return {
          board,
          timeBase: 'wall',
          droppedUartBytes: 0,
          flash: async () => undefined,
          onUart: (l) => (listeners.add(l), () => listeners.delete(l)),
          run: () => new Promise(() => undefined),
          writeUart: async () => undefined,
          reset: async () => undefined,
          close: async () => undefined,
        };
      },
    };
    const told: string[] = [];
    const outcome = dispatcher
      .dispatch({
        jobId: 'c',
        board: pico,
        backend: chatty,
        image: hello,
        uartSeconds: 10,
        maxUartBytes: 100,
        onUart: (s) => told.push(new TextDecoder().decode(concatUart([...s.uart]))),
      })
      .catch((err: unknown) => err);
    await settle();
    emit!('before\r\n');
    expect(dispatcher.cancel('c', 'the session ended')).toBe(true);
    expect(((await outcome) as BackendError).kind).toBe('cancelled');
    emit!('after\r\n');
    expect(told).toEqual(['before\r\n']);
    fake.tick(1_000);
    await dispatcher.close();
  });
});
