import type { Board } from '../../boards/board-schema.js';
import { type Backend, BackendError, type BackendErrorKind, type Device, type FirmwareImage, NANOS_PER_SECOND, type RunStop, type UartChunk } from '../../backends/backend.js';
import type { Clock } from '../../core/clock.js';
import type { DebugLegAddress } from '../../clients/bench/debug-leg.js';
import { GdbBridge, type GdbBridgeEnd } from './gdb-bridge.js';

export interface DebugSessionOptions {
  clock: Clock;
  /** TCP port for GDB on 127.0.0.1; 0 picks a free one (`onListening` says which). Absent: no port; `onBridge` brings the debuggers (a worker relaying streams from its server). */
  gdbPort?: number;
  /** A worker's debug job: where its legs are dialled, for a device that dials them itself (`GdbBridgeOptions.relay`). */
  relay?: DebugLegAddress;
  /** The bridge, once the core is halted and it takes debuggers (before `onListening`). */
  onBridge?: (bridge: GdbBridge) => void;
  /** The device, once opened (a worker writes serial input to it, and reads its time base). */
  onOpen?: (device: Device) => void;
  /** With no debugger connected this long, host ms, the session ends and frees the board. */
  idleTimeoutMs: number;
  /** After a detach the firmware runs on for at most this long, in the device's time base, its UART still streamed. */
  afterDetachSeconds: number;
  onUart: (chunk: UartChunk) => void;
  /** Lines for the user about connections (stderr in the CLI). */
  log: (line: string) => void;
  /** Called once GDB may connect, with the port. */
  onListening: (port: number) => void;
  /** Ends the session (Ctrl-C): the board is freed. */
  signal?: AbortSignal;
}

/**
 * How a debug session ended, in `hilbench flash`'s verdict words (exit 0, 1, 42), or interrupted
 * (Ctrl-C); `stop` how the firmware stopped when it ran on after a detach (or exited under the
 * debugger), `kind` the backend's error kind of a failure.
 */
export type DebugOutcome = { outcome: 'passed' | 'failed' | 'timeout' | 'interrupted'; reason: string; stop?: RunStop; kind?: BackendErrorKind };

/**
 * `hilbench debug` in this process: opens the board, flashes the image, serves GDB on the port
 * (each debugger finds the core halted at reset), streams the UART, and ends when the debugger
 * detaches (the firmware then runs on for `afterDetachSeconds`) or kills the target, when the
 * firmware ends under the debugger, when nobody debugs for the idle timeout, or on the signal.
 * Always closes the device.
 */
export async function runDebugSession(backend: Backend, board: Board, image: FirmwareImage, options: DebugSessionOptions): Promise<DebugOutcome> {
  let device;
  try {
    device = await backend.open(board, { signal: options.signal });
  } catch (err) {
    return failure(err);
  }
  options.onOpen?.(device);
  const unsubscribe = device.onUart(options.onUart);
  let bridge: GdbBridge | undefined;
  const onAbort = () => void bridge?.stop('interrupted');
  try {
    if (!device.debug) {
      throw new BackendError('unavailable', `board ${board.id} on the ${backend.name} backend cannot be debugged: this backend has no GDB server`);
    }
    await device.flash(image, { signal: options.signal });
    // Attached (or served) before the port is offered, so a board that cannot be debugged is
    // refused before anyone connects, and the first debugger finds the core already halted at reset.
    bridge = await GdbBridge.start({
      debug: device.debug,
      attachFirst: true,
      signal: options.signal,
      boardId: board.id,
      clock: options.clock,
      port: options.gdbPort,
      ...(options.relay ? { relay: options.relay } : {}),
      idleTimeoutMs: options.idleTimeoutMs,
      log: options.log,
    });
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    options.onBridge?.(bridge);
    options.onListening(bridge.port);
    const end = await bridge.ended;
    return await afterBridge(end, async () => {
      const stop = await device.run(options.afterDetachSeconds * NANOS_PER_SECOND, { signal: options.signal });
      if (stop.reason === 'crashed') return { outcome: 'failed', reason: `after the detach the firmware crashed: ${stop.message}`, stop };
      if (stop.reason === 'exited' && stop.exitCode !== 0) return { outcome: 'failed', reason: `after the detach the firmware exited with code ${stop.exitCode}`, stop };
      return { outcome: 'passed', reason: end.message, stop };
    });
  } catch (err) {
    if (options.signal?.aborted) return { outcome: 'interrupted', reason: 'interrupted (Ctrl-C); the board is freed' };
    return failure(err);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await bridge?.stop();
    unsubscribe();
    await device.close();
  }
}

async function afterBridge(end: GdbBridgeEnd, runOn: () => Promise<DebugOutcome>): Promise<DebugOutcome> {
  switch (end.reason) {
    case 'detached':
      return runOn();
    case 'killed':
      return { outcome: 'passed', reason: end.message };
    case 'exited': {
      const stop: RunStop = { reason: 'exited', exitCode: end.exitCode ?? -1, elapsedNanos: 0 };
      return end.exitCode === 0 ? { outcome: 'passed', reason: end.message, stop } : { outcome: 'failed', reason: end.message, stop };
    }
    case 'idle':
      return { outcome: 'timeout', reason: end.message };
    case 'stopped':
      return { outcome: 'interrupted', reason: 'interrupted (Ctrl-C); the board is freed' };
    case 'failed':
      return { outcome: 'failed', reason: end.message };
  }
}

function failure(err: unknown): DebugOutcome {
  if (err instanceof BackendError) return { outcome: 'failed', reason: `${err.kind}: ${err.message}`, kind: err.kind };
  throw err;
}
