import type { SimEngine } from '../../sim/sim-engine.js';
import type { SimGdbEnd } from '../../sim/sim-gdb-target.js';
import { BackendError, type DeviceDebug, type GdbStream, type UartChunk } from '../backend.js';

/** What the debug capability needs from its `SimDevice`. */
export interface SimDebugHost {
  /** The board's id, for messages. */
  boardId(): string;
  /** Builds a fresh chip from the flashed image (held at reset release) and makes it the device's; throws before flash. */
  resetEngine(): SimEngine;
  /** Hands UART output to the device's subscribers. */
  emitUart(chunk: UartChunk): void;
  /** Marks the device as driven by a debugger (run, reset and flash are refused meanwhile). */
  setDebugging(debugging: boolean): void;
}

/** Words for how a stub's session ended, as `GdbStream.closed` reports it. */
function endReason(end: SimGdbEnd): string {
  if (end.how === 'protocol-error') return `the debugger sent what is not GDB's remote protocol: ${end.message}`;
  return end.how === 'detached' ? 'the debugger detached' : 'the debugger killed the target';
}

/**
 * The sim backend's debug capability: a fresh chip from the flashed image, driven by the engine's
 * GDB stub (`SimEngine.openGdb`: avr8js through hilbench's own stub, rp2040js through its GDB
 * server). When the stream ends the chip stays the device's, so `run` continues from where the
 * debugger left it.
 */
export function simDeviceDebug(host: SimDebugHost): DeviceDebug & { detachAll(): void } {
  let current: { close(): void } | undefined;
  return {
    attach: async (options = {}) => {
      if (options.signal?.aborted) throw new BackendError('cancelled', `attaching a debugger to ${host.boardId()} cancelled`, { cause: options.signal.reason });
      if (current) throw new BackendError('internal', `a debugger is already attached to ${host.boardId()}: one at a time`);
      const engine = host.resetEngine();
      if (!engine.openGdb) throw new BackendError('unavailable', `the simulator of ${host.boardId()} has no GDB stub`);
      const listeners = new Set<(text: string) => void>();
      let settle: (value: { reason: string }) => void = () => undefined;
      const closed = new Promise<{ reason: string }>((resolve) => (settle = resolve));
      let ended = false;
      const finish = (reason: string) => {
        if (ended) return;
        ended = true;
        target.close();
        listeners.clear();
        current = undefined;
        host.setDebugging(false);
        settle({ reason });
      };
      const target = engine.openGdb({
        send: (text) => {
          for (const listener of listeners) listener(text);
        },
        onUart: (chunk) => host.emitUart({ atNanos: Math.round(chunk.atNanos), bytes: chunk.bytes }),
        // The reply to a detach is on its way to the debugger first (send is synchronous).
        onEnd: (end) => finish(endReason(end)),
      });
      host.setDebugging(true);
      const stream: GdbStream = {
        write: (text) => {
          if (!ended) target.receive(text);
        },
        onData: (listener) => {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        closed,
        close: async () => finish('closed by the bench'),
      };
      current = { close: () => finish('the device was closed') };
      return stream;
    },
    detachAll: () => current?.close(),
  };
}
