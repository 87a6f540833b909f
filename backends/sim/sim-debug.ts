import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { BackendError, type DeviceDebug, type GdbServeOptions, type GdbStream, type ServedGdbEvents, type ServedGdbPort, type UartChunk } from '../backend.js';
import type { SimThread } from './sim-thread-host.js';
import { DEBUG_BATCH_CHARS, type DebugInput, parseDebugOutput, parseServedOutput, type ServedEvent, type ThreadDebugOutput } from './sim-thread-protocol.js';
import type { DebugLegAddress } from '../../clients/bench/debug-leg.js';

/** What the debug capability needs from its `SimDevice`. */
export interface SimDebugHost {
  /** The board's id, for messages. */
  boardId(): string;
  /** The device's engine thread, where the GDB target runs beside the engine. */
  thread: SimThread;
  /** Throws unless a debugger may attach now (flashed, open, no run in progress). */
  checkAttachable(): void;
  /** Asks the thread to build a fresh chip and open its GDB target on `port` (moved to the thread); throws the thread's refusal as a `BackendError`. */
  attachOnThread(port: MessagePort): Promise<void>;
  /** Asks the thread to serve GDB on a TCP port itself, its news and events on `port` (moved to the thread); resolves with the port it listens on. */
  serveOnThread(port: MessagePort, where: { tcpPort: number; host: string; maxPacketBytes: number; relay?: DebugLegAddress }): Promise<number>;
  /** Takes in the counters and unmodelled reports of a debug message (may throw: the listener's exception). */
  takeCounters(output: ThreadDebugOutput): void;
  /** Hands UART output to the device's subscribers. */
  emitUart(chunk: UartChunk): void;
  /** Marks the device as driven by a debugger (run, reset and flash are refused meanwhile). */
  setDebugging(debugging: boolean): void;
}

/** A write of nothing but acks. */
const ACKS_ONLY = /^\++$/;

/** Words for how a stub's session ended, as `GdbStream.closed` reports it. */
function endReason(end: NonNullable<ThreadDebugOutput['end']>): string {
  if (end.how === 'protocol-error') return `the debugger sent what is not GDB's remote protocol: ${end.message}`;
  return end.how === 'detached' ? 'the debugger detached' : 'the debugger killed the target';
}

/**
 * The sim backend's debug capability: a fresh chip from the flashed image, driven by the engine's
 * GDB stub (`SimEngine.openGdb`: avr8js through hilbench's own stub, rp2040js through its GDB
 * server), which runs beside the engine in the device's thread. Each session has a
 * `MessageChannel` of its own, one port here and one in the thread (decision 0630): the
 * debugger's bytes cross as bare strings of at most `DEBUG_BATCH_CHARS` (acks wait for the next
 * bytes); the target's replies come back as bare strings, or with UART output, counters or the
 * end as `ThreadDebugOutput`. When the stream ends the chip stays the device's, so `run`
 * continues from where the debugger left it. A thread that fails ends the stream with why.
 */
export function simDeviceDebug(host: SimDebugHost): DeviceDebug & { serve: NonNullable<DeviceDebug['serve']>; detachAll(): void } {
  let current: { close(reason: string): void } | undefined;

  /**
   * A session's channel to the thread, with what both kinds of session share: the device marked as
   * debugged, the thread's failure ending it, news taken in (counters, UART output), and `finish`.
   */
  const openChannel = (what: string, onText: (text: string) => void) => {
    if (current) throw new BackendError('internal', `a debugger is already attached to ${host.boardId()}: one at a time`);
    host.checkAttachable();
    const { thread } = host;
    const { port1: port, port2: threadPort } = new MessageChannel();
    let settle: (value: { reason: string }) => void = () => undefined;
    const closed = new Promise<{ reason: string }>((resolve) => (settle = resolve));
    const channel = {
      port,
      threadPort,
      closed,
      ended: false,
      post: (input: DebugInput) => port.postMessage(input),
      /** Ends the session here; `tellThread` when the thread does not know yet (the bench ended it). */
      finish: (reason: string, tellThread: boolean) => {
        if (channel.ended) return;
        channel.ended = true;
        // Posted before the close, on the same channel: the thread reads it after every byte sent before it.
        if (tellThread && thread.unusable === undefined) channel.post({ type: 'close' });
        port.close();
        thread.setDebugListener(undefined);
        current = undefined;
        host.setDebugging(false);
        settle({ reason });
      },
      /** Takes in a message's news; false when the session ended on it. */
      takeOutput: (output: ThreadDebugOutput) => {
        try {
          host.takeCounters(output);
        } catch (err) {
          channel.finish(`the simulator of ${host.boardId()} failed under the debugger: ${(err as Error).message}`, true);
          return;
        }
        for (const chunk of output.chunks) host.emitUart({ atNanos: Math.round(chunk.atNanos), bytes: chunk.bytes });
        if (output.text.length > 0) onText(output.text);
        // The reply to a detach came first, in the same message.
        if (output.end) channel.finish(endReason(output.end), false);
      },
      /** The thread's message did not parse: a bug there, which ends it. */
      garbled: (err: unknown) => thread.terminate(new BackendError('internal', `${thread.label} sent ${what} the host does not understand: ${(err as Error).message}`)),
    };
    current = { close: (reason) => channel.finish(reason, true) };
    host.setDebugging(true);
    thread.setDebugListener({ onFailure: (reason) => channel.finish(`${reason.message}; the debugger's session ended`, false) });
    return channel;
  };

  return {
    attach: async (options = {}) => {
      if (options.signal?.aborted) throw new BackendError('cancelled', `attaching a debugger to ${host.boardId()} cancelled`, { cause: options.signal.reason });
      const listeners = new Set<(text: string) => void>();
      const channel = openChannel('debug output', (text) => {
        for (const listener of listeners) listener(text);
      });
      void channel.closed.then(() => listeners.clear());
      channel.port.on('message', (raw: unknown) => {
        if (channel.ended) return;
        let output: string | ThreadDebugOutput;
        try {
          output = parseDebugOutput(raw);
        } catch (err) {
          channel.garbled(err);
          return;
        }
        // The reply to a packet of a halted target: text and nothing else.
        if (typeof output === 'string') for (const listener of listeners) listener(output);
        else channel.takeOutput(output);
      });
      try {
        await host.attachOnThread(channel.threadPort);
      } catch (err) {
        channel.finish('the debugger could not attach', false);
        throw err;
      }
      /** Acks the debugger sent since its last other bytes, still to cross (see `write`). */
      let heldAcks = '';
      const stream: GdbStream = {
        write: (text) => {
          if (channel.ended) return;
          // GDB acks every reply with '+'. The engines' stubs read nothing from an ack (they never
          // retransmit), so a write of acks alone waits here and crosses with the debugger's next
          // bytes: the same bytes in the same order, one wake-up of the thread per packet instead
          // of two. A NAK, an interrupt or a packet crosses at once, with the acks before it.
          if (ACKS_ONLY.test(text) && heldAcks.length + text.length < DEBUG_BATCH_CHARS) {
            heldAcks += text;
            return;
          }
          text = heldAcks + text;
          heldAcks = '';
          if (text.length <= DEBUG_BATCH_CHARS) channel.post(text);
          else for (let at = 0; at < text.length; at += DEBUG_BATCH_CHARS) channel.post(text.slice(at, at + DEBUG_BATCH_CHARS));
        },
        onData: (listener) => {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        closed: channel.closed,
        close: async () => channel.finish('closed by the bench', true),
      };
      return stream;
    },
    serve: async (options: GdbServeOptions): Promise<ServedGdbPort> => {
      if (options.signal?.aborted) throw new BackendError('cancelled', `serving GDB for ${host.boardId()} cancelled`, { cause: options.signal.reason });
      // The target's text goes straight to the debugger's socket in the thread; only news comes here.
      const channel = openChannel('served GDB port news', () => undefined);
      channel.port.on('message', (raw: unknown) => {
        if (channel.ended) return;
        let output: ServedEvent | ThreadDebugOutput;
        try {
          output = parseServedOutput(raw);
        } catch (err) {
          channel.garbled(err);
          return;
        }
        if ('event' in output) tellServed(options.events, output);
        else channel.takeOutput({ ...output, end: undefined });
      });
      let port: number;
      try {
        port = await host.serveOnThread(channel.threadPort, { tcpPort: options.port, host: options.host, maxPacketBytes: options.maxPacketBytes, ...(options.relay ? { relay: options.relay } : {}) });
      } catch (err) {
        channel.finish('GDB could not be served', false);
        throw err;
      }
      return { port, closed: channel.closed, close: async () => channel.finish('closed by the bench', true) };
    },
    detachAll: () => current?.close('the device was closed'),
  };
}

/** A served port's event, told to the host's listener. */
function tellServed(events: ServedGdbEvents, event: ServedEvent): void {
  switch (event.event) {
    case 'connected':
      return events.connected();
    case 'refused':
      return events.refused(event.message);
    case 'protocol-error':
      return events.protocolError(event.message);
    case 'attach-failed':
      return events.attachFailed(event.message);
    case 'disconnected': {
      const { ending } = event;
      return events.disconnected(ending?.reason === 'exited' ? { ...ending, exitCode: ending.exitCode } : ending);
    }
    case 'leg-trouble':
      return events.legTrouble?.(event.message);
  }
}
