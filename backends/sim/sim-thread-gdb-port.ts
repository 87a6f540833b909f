import net from 'node:net';
import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { DebuggerGate, secondDebuggerMessage } from '../../core/gdb/debugger-gate.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { RspProtocolError } from '../../core/gdb/rsp-reader.js';
import { SimError } from '../../sim/sim-error.js';
import type { SimChip } from './sim-chip.js';
import { ThreadDebugSession, type ThreadDebugHost } from './sim-thread-debug.js';
import { parseDebugInput, type ServedEvent, type ThreadDebugOutput } from './sim-thread-protocol.js';

/** Idle time before TCP keepalive probes a debugger's connection, ms (as the host's bridge does). */
const KEEPALIVE_MS = 10_000;

export interface ThreadGdbPortOptions {
  chip: SimChip;
  boardId: string;
  /** The served port's channel: events and news to the host, its close from the host. */
  channel: MessagePort;
  tcpPort: number;
  host: string;
  maxPacketBytes: number;
  /** The thread's side of a session (beat, counters, unmodelled reports); `onEnd` is the port's. */
  sessionHost: Omit<ThreadDebugHost, 'onEnd'>;
}

/**
 * GDB's remote protocol served on a TCP port by the engine's own thread (decision 0740): a
 * debugger's packet reaches the stub, and its reply the socket, without waking any other thread,
 * as rp2040js's own GDB server serves from the thread its simulator runs in. The bridge's rules
 * hold here (`DebuggerGate`): the debugger's bytes are checked as RSP before the stub sees them,
 * and a malformed or oversized packet closes only that connection; a second debugger gets an
 * `E.` reply naming the board and is closed; each debugger gets the chip back at reset, halted
 * (the first one's session is opened before the port is offered, so a chip that cannot be
 * debugged is refused by `listen`); a detach, a kill or an exit reply ends the port once that
 * connection closes. The host keeps the idle timer and the log: it hears of each connection,
 * refusal and close on `channel`, with the UART output and counters of the sessions.
 */
export class ThreadGdbPort {
  private readonly server = net.createServer((socket) => this.accept(socket));
  private active: net.Socket | undefined;
  /** The next debugger's session, opened ahead (the first one only). */
  private prepared: ThreadDebugSession | undefined;
  private current: ThreadDebugSession | undefined;
  private over = false;
  /** The rules of the connection being served (a fresh gate per connection). */
  private gate: DebuggerGate;

  private constructor(private readonly options: ThreadGdbPortOptions) {
    this.gate = new DebuggerGate({ maxPacketBytes: options.maxPacketBytes });
    options.channel.on('message', (raw: unknown) => this.take(raw));
    options.channel.once('close', () => this.close());
  }

  /** Opens the first debugger's session and listens; throws a `SimError` when the chip cannot be debugged or the port cannot be had. */
  static async listen(options: ThreadGdbPortOptions): Promise<ThreadGdbPort> {
    const served = new ThreadGdbPort(options);
    try {
      served.prepared = served.openSession();
      await new Promise<void>((resolve, reject) => {
        served.server.once('error', (err: NodeJS.ErrnoException) => {
          const why = err.code === 'EADDRINUSE' ? 'the port is taken (choose another with --gdb-port)' : err.message;
          reject(new SimError('unavailable', `cannot serve GDB on ${options.host}:${options.tcpPort}: ${why}`));
        });
        served.server.listen(options.tcpPort, options.host, () => {
          served.server.removeAllListeners('error');
          resolve();
        });
      });
    } catch (err) {
      served.close();
      throw err;
    }
    return served;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
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
    this.prepared?.close();
    this.current?.close();
    this.active?.destroy();
    this.options.channel.close();
  }

  private take(raw: unknown) {
    // The host sends nothing but its close here; anything else is a bug on the host: let it end the thread loudly.
    if (typeof parseDebugInput(raw) === 'string') throw new Error('a served GDB port takes no debugger bytes from the host');
    this.close();
  }

  private tell(event: ServedEvent | ThreadDebugOutput) {
    if (!this.over) this.options.channel.postMessage(event);
  }

  private accept(socket: net.Socket) {
    socket.on('error', () => undefined);
    if (this.over) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    // A debugger whose host vanished without closing (a laptop lid) is noticed by TCP keepalive and
    // counts as disconnected: the host's idle timeout frees the board.
    socket.setKeepAlive(true, KEEPALIVE_MS);
    if (this.active) {
      const message = secondDebuggerMessage(this.options.boardId);
      socket.end(Buffer.from(`+${rspPacket(`E.${message}`)}`, 'latin1'));
      this.tell({ event: 'refused', message });
      return;
    }
    let session: ThreadDebugSession;
    try {
      session = this.prepared ?? this.openSession();
    } catch (err) {
      const message = `could not attach to ${this.options.boardId}: ${(err as Error).message}`;
      socket.end(Buffer.from(`+${rspPacket(`E.${message}`)}`, 'latin1'));
      this.tell({ event: 'attach-failed', message });
      return;
    }
    this.prepared = undefined;
    this.active = socket;
    this.current = session;
    this.tell({ event: 'connected' });
    socket.on('data', (data: Buffer) => {
      this.options.sessionHost.beat();
      let forward: string;
      try {
        forward = this.gate.fromDebugger(data.toString('latin1'));
      } catch (err) {
        if (!(err instanceof RspProtocolError)) throw err;
        this.tell({ event: 'protocol-error', message: err.message });
        socket.destroy();
        return;
      }
      if (forward.length > 0) session.receive(forward);
    });
    socket.once('close', () => {
      session.close();
      this.active = undefined;
      this.current = undefined;
      const { ending } = this.gate;
      this.gate = new DebuggerGate({ maxPacketBytes: this.options.maxPacketBytes });
      // The debugging is over: nobody else is taken while the host ends the port.
      if (ending) this.server.close();
      this.tell({ event: 'disconnected', ...(ending ? { ending } : {}) });
    });
  }

  /**
   * A fresh session on the chip (back at reset, halted): the target's text goes to whichever
   * debugger is connected, checked for an exit reply; its news to the host.
   */
  private openSession(): ThreadDebugSession {
    const session: ThreadDebugSession = new ThreadDebugSession(
      this.options.chip,
      this.options.boardId,
      {
        post: (text, news) => {
          const socket = this.current === session ? this.active : undefined;
          if (text.length > 0 && socket && !socket.destroyed) {
            this.gate.fromTarget(text);
            socket.write(Buffer.from(text, 'latin1'));
          }
          if (news) this.tell({ text: '', ...news });
          // The stub ended the session (its reply to a detach or kill is written): close the connection.
          if (news?.end && socket) socket.end();
        },
      },
      { ...this.options.sessionHost, onEnd: () => undefined },
    );
    return session;
  }
}
