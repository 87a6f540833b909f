import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import type { EngineUartChunk } from '../../sim/sim-engine.js';
import type { SimGdbEnd, SimGdbTarget } from '../../sim/sim-gdb-target.js';
import type { SimChip, SimCounters } from './sim-chip.js';
import { CONTROL, DEBUG_BATCH_CHARS, type DebugNews, parseDebugInput, type ThreadDebugOutput, UART_BATCH_BYTES } from './sim-thread-protocol.js';

/** What a debug session needs from the thread that serves it. */
export interface ThreadDebugHost {
  control: Int32Array;
  /** Bumps the thread's sign of life. */
  beat(): void;
  /** The device's counters now. */
  counters(): SimCounters;
  /** The unmodelled reports since the last taken; empty when there are none. */
  takeUnmodelled(): ThreadDebugOutput['unmodelled'];
  /** True when an unmodelled access was reported since the last `takeUnmodelled`. */
  hasUnmodelled(): boolean;
  /** Called once when the debugger ends the session (detach, kill, not RSP). */
  onEnd(): void;
}

/**
 * Where a session's output goes: the target's text to the debugger, and news for the host (UART
 * output, the counters when they moved, unmodelled reports, the end) when there is any. On a
 * session's channel both cross together (`channelSink`); a port the thread serves writes the
 * text to the debugger's socket and posts only the news (sim-thread-gdb-port.ts).
 */
export interface ThreadDebugSink {
  post(text: string, news: DebugNews | undefined): void;
}

/** Posts on a session's channel: the text alone as a bare string, or with the news as one `ThreadDebugOutput`. */
export function channelSink(port: MessagePort): ThreadDebugSink {
  return { post: (text, news) => port.postMessage(news ? ({ text, ...news } satisfies ThreadDebugOutput) : text) };
}

/**
 * Feeds a session from its channel (decision 0630): the debugger's bytes as the host cut them, or
 * the bench's close; the host's end going away closes the session too. `drainPending` handles,
 * now, every message the host has already posted on the channel: the host's device requests
 * (run, reset, flash, ...) come on the thread's main port, and Node keeps no order between two
 * ports, so a `run` posted after the bench closed the session could otherwise be handled before
 * that close (and the bytes before it).
 */
export function feedFromChannel(session: ThreadDebugSession, port: MessagePort, beat: () => void): { drainPending(): void; close(): void } {
  let over = false;
  const close = () => {
    if (over) return;
    over = true;
    session.close();
    port.close();
  };
  const take = (raw: unknown) => {
    // A message that does not parse is a bug on the host: let it end the thread loudly.
    const input = parseDebugInput(raw);
    if (typeof input === 'string') session.receive(input);
    else close();
  };
  port.on('message', (raw: unknown) => {
    beat();
    take(raw);
  });
  // The host's end of the channel went away: nobody reads what the target would say.
  port.once('close', close);
  return {
    drainPending: () => {
      for (let next = receiveMessageOnPort(port); next !== undefined && !over; next = receiveMessageOnPort(port)) take(next.message);
    },
    close,
  };
}

const setImmediateYield = () => new Promise<void>((resolve) => setImmediate(resolve));

const sameCounters = (a: SimCounters, b: SimCounters) =>
  a.instructions === b.instructions &&
  a.simulatedNanos === b.simulatedNanos &&
  a.sleptNanos === b.sleptNanos &&
  a.coreClockHz === b.coreClockHz &&
  a.droppedRxBytes === b.droppedRxBytes;

/**
 * One debugger's session inside an engine thread: the engine's GDB target (`SimChip.openGdb`)
 * beside the engine, fed with the debugger's bytes as they arrive (`receive`: from the session's
 * own channel, decision 0630, or from the debugger's socket on a port the thread serves, decision
 * 0740). What the target sends, and the UART output of a continue, is gathered and handed to the
 * `sink`: what it answers at once as soon as it has been fed (a halted
 * target's reply crosses without waiting for a turn of the loop: decision 0566), what it sends
 * later once per turn of the thread's event loop (after its microtasks, so a stop reply goes out
 * with the target's state settled), once per slice of a continue, and early when a message would
 * pass `DEBUG_BATCH_CHARS` or `UART_BATCH_BYTES`. Text alone, with the device's counters as last
 * posted and nothing unmodelled, goes without news; anything more with it.
 *
 * `CONTROL.debugWorking` tells the host's watchdog whether silence counts: 1 from the moment
 * bytes arrive until the target is halted again (a continue keeps it at 1 and beats every
 * slice), 0 while the target waits for the debugger, which may take as long as a person likes.
 */
export class ThreadDebugSession {
  private readonly target: SimGdbTarget;
  private text = '';
  private chunks: EngineUartChunk[] = [];
  private chunkBytes = 0;
  private flushScheduled = false;
  /** True while the target handles the debugger's bytes: `receive` flushes right after. */
  private receiving = false;
  private over = false;
  /** The counters the host saw last: until they change, replies cross as bare strings. */
  private postedCounters: SimCounters | undefined;

  constructor(
    chip: SimChip,
    boardId: string,
    private readonly sink: ThreadDebugSink,
    private readonly host: ThreadDebugHost,
  ) {
    this.target = chip.openGdb(
      {
        send: (text) => this.take(text),
        onUart: (chunk) => {
          this.chunks.push(chunk);
          this.chunkBytes += chunk.bytes.length;
          if (this.chunkBytes >= UART_BATCH_BYTES) this.flush();
        },
        // The detach reply is already gathered: it goes out in the same message as the end.
        onEnd: (end) => this.end(end),
        yieldToHost: async () => {
          host.beat();
          this.flush();
          await setImmediateYield();
          this.scheduleFlush();
        },
      },
      boardId,
    );
  }

  /** The debugger's bytes, as they came. */
  receive(text: string): void {
    if (this.over) return;
    Atomics.store(this.host.control, CONTROL.debugWorking, 1);
    this.receiving = true;
    try {
      this.target.receive(text);
    } finally {
      this.receiving = false;
    }
    // The reply to a packet of a halted target (a register read, a memory read) is complete by
    // now: post it at once rather than after a turn of the event loop, which on a loaded machine
    // may wait for the thread to get a core again. What the target sends later (a stop reply
    // after a continue, output of a microtask) still goes out by `scheduleFlush`.
    this.flush();
  }

  /** The bench or the debugger ends the session: the target stops where it is; nothing more is sent. */
  close(): void {
    if (this.over) return;
    this.over = true;
    this.target.close();
    Atomics.store(this.host.control, CONTROL.debugWorking, 0);
  }

  private take(text: string) {
    this.text += text;
    if (this.text.length >= DEBUG_BATCH_CHARS) this.flush();
    // Sent while handling the debugger's bytes: `receive` posts it once the target returns, so
    // no turn of the loop is spent on a flush that finds nothing (one per packet otherwise).
    else if (!this.receiving) this.scheduleFlush();
  }

  private scheduleFlush() {
    if (this.flushScheduled || this.over) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** Posts what is gathered, cut at the bound; the watchdog word is set first, so the host never reads a stale one after a reply. */
  private flush(end?: SimGdbEnd) {
    if (this.over) return;
    Atomics.store(this.host.control, CONTROL.debugWorking, end === undefined && this.target.running ? 1 : 0);
    if (this.text.length === 0 && this.chunks.length === 0 && end === undefined) return;
    let text = this.text;
    let chunks = this.chunks;
    this.text = '';
    this.chunks = [];
    this.chunkBytes = 0;
    do {
      const piece = text.slice(0, DEBUG_BATCH_CHARS);
      text = text.slice(DEBUG_BATCH_CHARS);
      this.post(piece, chunks, text.length === 0 ? end : undefined);
      chunks = [];
    } while (text.length > 0);
  }

  /** The text alone when it is all the news; otherwise with the UART output, the end, the counters and the unmodelled reports. */
  private post(text: string, chunks: EngineUartChunk[], end: SimGdbEnd | undefined) {
    const counters = this.host.counters();
    const countersSeen = this.postedCounters !== undefined && sameCounters(this.postedCounters, counters);
    if (chunks.length === 0 && end === undefined && countersSeen && !this.host.hasUnmodelled()) {
      this.sink.post(text, undefined);
      return;
    }
    this.postedCounters = counters;
    this.sink.post(text, { chunks, end, counters, unmodelled: this.host.takeUnmodelled() });
  }

  private end(end: SimGdbEnd) {
    if (this.over) return;
    this.flush(end);
    this.over = true;
    this.host.onEnd();
  }
}
