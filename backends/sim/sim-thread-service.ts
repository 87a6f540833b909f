import type { MessagePort } from 'node:worker_threads';
import type { Board } from '../../boards/board-schema.js';
import { parseElf } from '../../core/elf.js';
import type { EngineRunStop } from '../../sim/run-engine.js';
import type { EngineUartChunk } from '../../sim/sim-engine.js';
import { SimError } from '../../sim/sim-error.js';
import type { BackendErrorKind } from '../backend.js';
import { lowerThisThreadsPriority } from './engine-thread-priority.js';
import { SimChip } from './sim-chip.js';
import type { EngineFactoryFor } from './sim-engines.js';
import { channelSink, feedFromChannel, ThreadDebugSession } from './sim-thread-debug.js';
import { ThreadGdbPort } from './sim-thread-gdb-port.js';
import { CONTROL, type HostMessage, hostMessageSchema, STOP, type ThreadMessage, UART_BATCH_BYTES } from './sim-thread-protocol.js';

const setImmediateYield = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The engine side of a sim thread: serves one device at a time on `port` (open, flash, reset,
 * run, pins, UART input, close) with a `SimChip`, and reports back in the messages of
 * `sim-thread-protocol.ts`. A failure of the engine is answered as the request's error; only an
 * exception outside a request (or the engine ending the thread) ends the thread, which the host
 * then reports as the job's reason.
 */
export function serveSimThread(port: MessagePort, options: { control: SharedArrayBuffer; nice?: number; engineFactory: EngineFactoryFor }): void {
  if (options.nice !== undefined) lowerThisThreadsPriority(options.nice);
  const control = new Int32Array(options.control);
  const beat = () => Atomics.add(control, CONTROL.beat, 1);
  let device: { board: Board; chip: SimChip } | undefined;
  /** Wakes a run that asked the host about `until`; set while it waits. */
  let wakeForVerdict: (() => void) | undefined;
  /** The debugger's session on the device's chip, while one is attached, or the GDB port the thread serves (at most one of either). */
  let debug: { drainPending(): void; close(): void } | undefined;
  const endDebug = () => {
    debug?.close();
    debug = undefined;
  };

  // Unmodelled accesses: a message's first report goes out with count 1, later ones as the latest
  // count. Every new report is in `latestCount` until taken.
  const firstSeen: string[] = [];
  const latestCount = new Map<string, number>();
  const takeUnmodelled = () => {
    const reports = firstSeen.map((message) => ({ message, count: 1 }));
    for (const [message, count] of latestCount) if (count > 1) reports.push({ message, count });
    firstSeen.length = 0;
    latestCount.clear();
    return reports;
  };
  const send = (message: ThreadMessage) => port.postMessage(message);
  const answer = (
    id: number,
    fields: {
      error?: { kind: BackendErrorKind; message: string };
      stop?: EngineRunStop;
      reading?: ThreadAnswerReading;
      chunks?: EngineUartChunk[];
      listening?: number;
    } = {},
  ) =>
    send({ type: 'answer', id, counters: device?.chip.counters, unmodelled: takeUnmodelled(), ...fields });

  const open = (board: Board, bootrom: Uint32Array | undefined) => {
    const createEngine = options.engineFactory(board, {
      bootrom,
      onUnmodelled: (message, count) => {
        if (count === 1) firstSeen.push(message);
        latestCount.set(message, count);
      },
    });
    device = { board, chip: new SimChip(createEngine) };
  };

  const run = async (id: number, chip: SimChip, request: Extract<HostMessage, { type: 'run' }>) => {
    let chunks: EngineUartChunk[] = [];
    let chunkBytes = 0;
    const flush = (ask: boolean) => {
      if (!ask && chunks.length === 0 && latestCount.size === 0) return;
      send({ type: 'batch', chunks, ask, counters: chip.counters, unmodelled: takeUnmodelled() });
      chunks = [];
      chunkBytes = 0;
    };
    const stopAsked = () => Atomics.load(control, CONTROL.stop) !== STOP.go;
    /**
     * The condition lives on the host: hand it the chunk and wait for its verdict, so the run
     * stops at exactly this chunk when it holds. The thread waits in its event loop (no blocking
     * wait), woken by the host's `verdict` message once the shared verdict word has moved.
     */
    const askHost = async () => {
      const seen = Atomics.load(control, CONTROL.verdict);
      beat();
      Atomics.store(control, CONTROL.waiting, 1);
      flush(true);
      await new Promise<void>((resolve) => {
        wakeForVerdict = () => {
          if (Atomics.load(control, CONTROL.verdict) === seen) return;
          wakeForVerdict = undefined;
          resolve();
        };
      });
      Atomics.store(control, CONTROL.waiting, 0);
      return stopAsked();
    };
    const until = () => (request.asks && chunks.length > 0 ? askHost() : stopAsked());
    const stop = await chip.run({
      endNanos: request.endNanos,
      sliceNanos: request.sliceNanos,
      until,
      onUart: (chunk) => {
        chunks.push(chunk);
        chunkBytes += chunk.bytes.length;
        if (!request.asks && chunkBytes >= UART_BATCH_BYTES) flush(false);
      },
      yieldToHost: async () => {
        beat();
        flush(false);
        await setImmediateYield();
      },
    });
    const aborted = stop.reason === 'until' && Atomics.load(control, CONTROL.stop) === STOP.abort;
    // The output still held goes with the answer, not in a batch of its own: one message to wake the host for, not two (decision 0730).
    answer(id, { stop: aborted ? { reason: 'cancelled', elapsedNanos: stop.elapsedNanos } : stop, chunks: chunks.length > 0 ? chunks : undefined });
  };

  const sessionHost = (chip: SimChip) => ({ control, beat, counters: () => chip.counters, takeUnmodelled, hasUnmodelled: () => latestCount.size > 0 });

  const attachDebugger = (id: number, debugPort: MessagePort, board: Board, chip: SimChip) => {
    endDebug();
    try {
      // `onEnd` runs only once the debugger's bytes arrive, after `fed` is set.
      const session = new ThreadDebugSession(chip, board.id, channelSink(debugPort), {
        ...sessionHost(chip),
        onEnd: () => {
          if (debug === fed) debug = undefined;
        },
      });
      const fed = feedFromChannel(session, debugPort, beat);
      debug = fed;
      answer(id);
    } catch (err) {
      debugPort.close();
      answer(id, { error: failure(err, `attaching a debugger to ${board.id}`) });
    }
  };

  const serveDebugger = async (message: Extract<HostMessage, { type: 'debug-serve' }>, board: Board, chip: SimChip) => {
    endDebug();
    try {
      const { port: channel, tcpPort, host, maxPacketBytes, relay } = message;
      const served = await ThreadGdbPort.listen({ chip, boardId: board.id, channel, tcpPort, host, maxPacketBytes, ...(relay ? { relay } : {}), sessionHost: sessionHost(chip) });
      debug = served;
      answer(message.id, { listening: served.port });
    } catch (err) {
      message.port.close();
      answer(message.id, { error: failure(err, `serving GDB for ${board.id}`) });
    }
  };

  const handle = async (message: HostMessage) => {
    if (message.type === 'verdict') {
      // A verdict nobody waits for (an abort between asks) is already in the stop word.
      wakeForVerdict?.();
      return;
    }
    if (message.type === 'open') {
      open(message.board, message.bootrom);
      answer(message.id);
      return;
    }
    if (!device) throw new Error(`sim thread: ${message.type} before open`);
    // What the debugger's channel already holds was posted before this request (see drainPending).
    debug?.drainPending();
    const { board, chip } = device;
    switch (message.type) {
      case 'write':
        chip.queueUartInput(message.bytes);
        return;
      case 'drive':
        chip.drivePin(message.pin, message.level);
        return;
      case 'debug-attach':
        attachDebugger(message.id, message.port, board, chip);
        return;
      case 'debug-serve':
        await serveDebugger(message, board, chip);
        return;
      case 'close':
        endDebug();
        chip.release();
        answer(message.id);
        device = undefined;
        return;
      case 'read':
        try {
          answer(message.id, { reading: chip.readPin(message.pin) });
        } catch (err) {
          answer(message.id, { error: failure(err, `reading pin ${message.pin} of ${board.id}`) });
        }
        return;
      case 'flash':
      case 'reset':
        try {
          if (message.type === 'flash') chip.flash({ bytes: message.bytes, elf: parseElf(message.bytes) });
          else chip.reset();
          answer(message.id);
        } catch (err) {
          answer(message.id, { error: failure(err, `loading the image into ${board.id}`) });
        }
        return;
      case 'run':
        try {
          await run(message.id, chip, message);
        } catch (err) {
          answer(message.id, { error: failure(err, `simulating ${board.id}`) });
        }
        return;
    }
  };

  port.on('message', (raw: unknown) => {
    beat();
    // A message that does not parse is a bug on the host: let it end the thread loudly.
    void handle(hostMessageSchema.parse(raw));
  });
  send({ type: 'ready' });
}

type ThreadAnswerReading = ReturnType<SimChip['readPin']>;

/** A failure in the words the device reports: the simulator's own kinds, or an unexpected one as internal. */
function failure(err: unknown, doing: string): { kind: BackendErrorKind; message: string } {
  if (err instanceof SimError) return { kind: err.kind, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return { kind: 'internal', message: `the simulator failed unexpectedly while ${doing}: ${message}` };
}
