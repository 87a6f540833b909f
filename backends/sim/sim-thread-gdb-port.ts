import net from 'node:net';
import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { type DebugLegAddress, dialDebugLeg, serveDebugLegs } from '../../clients/bench/debug-leg.js';
import { systemClock } from '../../core/clock.js';
import { socketConnection } from '../../core/gdb/debugger-connection.js';
import { type DebugTarget, DebuggerSlot } from '../../core/gdb/debugger-slot.js';
import { SimError } from '../../sim/sim-error.js';
import type { SimChip } from './sim-chip.js';
import { ThreadDebugSession, type ThreadDebugHost } from './sim-thread-debug.js';
import { parseDebugInput, type ServedEvent, type ThreadDebugOutput } from './sim-thread-protocol.js';

export interface ThreadGdbPortOptions {
  chip: SimChip;
  boardId: string;
  /** The served port's channel: events and news to the host, its close from the host. */
  channel: MessagePort;
  tcpPort: number;
  host: string;
  maxPacketBytes: number;
  /** Dial this bench server's debug legs instead of listening (decision 0910): a relayed packet then wakes only this thread on a worker. */
  relay?: DebugLegAddress;
  /** The thread's side of a session (beat, counters, unmodelled reports); `onEnd` is the port's. */
  sessionHost: Omit<ThreadDebugHost, 'onEnd'>;
}

/**
 * GDB's remote protocol served on a TCP port by the engine's own thread (decision 0740): a
 * debugger's packet reaches the stub, and its reply the socket, without waking any other thread,
 * as rp2040js's own GDB server serves from the thread its simulator runs in. The connections are
 * taken by the same `DebuggerSlot` as the host's bridge takes them (decision 0811): one debugger
 * at a time, its bytes checked as RSP before the stub sees them, each at reset, halted (the first
 * one's session is opened before the port is offered, so a chip that cannot be debugged is refused
 * by `listen`), a detach, a kill or an exit reply ending the port once that connection closes. The
 * host keeps the idle timer and the log: it hears the slot's events on `channel`, with the UART
 * output and counters of the sessions.
 *
 * With `relay` (a worker's debug job) it listens on no port: it dials the bench server's legs for
 * the job, one at a time (`serveDebugLegs`, as the worker's main thread does for its bridge), and
 * each debugger's stream is taken by the same slot. The dials' waits run on this thread's system
 * clock: the host's injected clock cannot cross to a thread (decision 0740).
 */
export class ThreadGdbPort {
  private readonly server = net.createServer((socket) => this.slot.accept(socketConnection(socket)));
  private readonly slot: DebuggerSlot;
  private over = false;
  /** Ends the dialling of a relayed port's legs. */
  private readonly legs = new AbortController();

  private constructor(
    private readonly options: ThreadGdbPortOptions,
    first: DebugTarget,
  ) {
    const tell = (event: ServedEvent) => this.tell(event);
    this.slot = new DebuggerSlot({
      boardId: options.boardId,
      maxPacketBytes: options.maxPacketBytes,
      // Synchronous in this thread; a failure is the slot's attach failure all the same.
      attach: async () => this.openTarget(),
      first,
      events: {
        connected: () => tell({ event: 'connected' }),
        refused: (message) => tell({ event: 'refused', message }),
        protocolError: (message) => tell({ event: 'protocol-error', message }),
        attachFailed: (message) => tell({ event: 'attach-failed', message }),
        disconnected: (ending) => {
          // The debugging is over: the listener closes (no more legs are dialled) while the host ends the port.
          if (ending) {
            this.server.close();
            this.legs.abort();
          }
          tell({ event: 'disconnected', ...(ending ? { ending } : {}) });
        },
      },
    });
    options.channel.on('message', (raw: unknown) => this.take(raw));
    options.channel.once('close', () => this.close());
  }

  /** Opens the first debugger's session and listens; throws a `SimError` when the chip cannot be debugged or the port cannot be had. */
  static async listen(options: ThreadGdbPortOptions): Promise<ThreadGdbPort> {
    let served: ThreadGdbPort | undefined;
    try {
      const first = openTarget(options, (news) => served?.tell(news));
      served = new ThreadGdbPort(options, first);
      if (options.relay) {
        served.dialLegs(options.relay);
        return served;
      }
      const { server } = served;
      await new Promise<void>((resolve, reject) => {
        server.once('error', (err: NodeJS.ErrnoException) => {
          const why = err.code === 'EADDRINUSE' ? 'the port is taken (choose another with --gdb-port)' : err.message;
          reject(new SimError('unavailable', `cannot serve GDB on ${options.host}:${options.tcpPort}: ${why}`));
        });
        server.listen(options.tcpPort, options.host, () => {
          server.removeAllListeners('error');
          resolve();
        });
      });
    } catch (err) {
      if (served) served.close();
      else options.channel.close();
      throw err;
    }
    return served;
  }

  /** The TCP port it listens on; 0 for a relayed port. */
  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  /** Handles, now, what the host already posted (its close), before a device request that came after it on the thread's main port. */
  drainPending(): void {
    for (let next = receiveMessageOnPort(this.options.channel); next !== undefined && !this.over; next = receiveMessageOnPort(this.options.channel)) this.take(next.message);
  }

  /** Stops listening and closes the debugger's connection; the chip stays where it is. */
  close(): void {
    if (this.over) return;
    this.over = true;
    this.server.close();
    this.legs.abort();
    this.slot.close();
    this.options.channel.close();
  }

  /** Dials the job's legs until the port closes or the server says the job is no longer a debug job there; each stream goes to the slot. */
  private dialLegs(relay: DebugLegAddress): void {
    const { signal } = this.legs;
    void serveDebugLegs((leg) => this.slot.accept(socketConnection(leg)), {
      dial: (aborted) => dialDebugLeg({ ...relay, clock: systemClock, signal: aborted }),
      clock: systemClock,
      signal,
      retryMs: RELAY_RETRY_MS,
      logError: (message, cause) => this.tell({ event: 'leg-trouble', message: cause instanceof Error ? `${message}: ${cause.message}` : message }),
    });
  }

  private take(raw: unknown) {
    // The host sends nothing but its close here; anything else is a bug on the host: let it end the thread loudly.
    if (typeof parseDebugInput(raw) === 'string') throw new Error('a served GDB port takes no debugger bytes from the host');
    this.close();
  }

  private tell(event: ServedEvent | ThreadDebugOutput) {
    if (!this.over) this.options.channel.postMessage(event);
  }

  private openTarget(): DebugTarget {
    return openTarget(this.options, (news) => this.tell(news));
  }
}

/** Host ms before a relayed port dials again after the server could not be reached (doubling), as a worker's own retry starts. */
const RELAY_RETRY_MS = 1_000;

/**
 * A fresh session on the chip (back at reset, halted) as the slot's target: the debugger's bytes
 * go to the stub as they pass the gate, its text to the debugger the slot connects, its news
 * (UART output, counters, unmodelled reports) to the host by `tell`. Throws when the chip cannot
 * be debugged.
 */
function openTarget(options: ThreadGdbPortOptions, tell: (news: ThreadDebugOutput) => void): DebugTarget {
  let toDebugger: (text: string) => void = () => undefined;
  let ended: (why: { reason: string }) => void = () => undefined;
  const closed = new Promise<{ reason: string }>((resolve) => (ended = resolve));
  const session = new ThreadDebugSession(
    options.chip,
    options.boardId,
    {
      post: (text, news) => {
        if (text.length > 0) toDebugger(text);
        if (news) tell({ text: '', ...news });
        // The stub ended the session (its reply to a detach or kill is written): the slot closes the connection.
        if (news?.end) ended({ reason: news.end.how === 'protocol-error' ? `the stub refused the debugger's bytes: ${news.end.message}` : `the debugger ${news.end.how} the target` });
      },
    },
    { ...options.sessionHost, onEnd: () => undefined },
  );
  return {
    write: (text) => {
      options.sessionHost.beat();
      session.receive(text);
    },
    onData: (listener) => void (toDebugger = listener),
    closed,
    close: () => {
      session.close();
      ended({ reason: 'closed by the bench' });
    },
  };
}
