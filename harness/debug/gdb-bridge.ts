import net from 'node:net';
import { BackendError, type DeviceDebug, type GdbStream } from '../../backends/backend.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { DEFAULT_MAX_PACKET_BYTES, RspProtocolError, RspReader } from '../../core/gdb/rsp-reader.js';
import { ExitReplyScan } from '../../core/gdb/exit-reply-scan.js';

/** Idle time before TCP keepalive probes a debugger's connection, ms. */
const KEEPALIVE_MS = 10_000;

/** How a bridge ended: the debugger detached or killed the target, the firmware exited under it, nobody debugged for the idle timeout, or the bench stopped it. */
export type GdbBridgeEnd =
  | { reason: 'detached' | 'killed' | 'idle' | 'stopped'; message: string }
  | { reason: 'exited'; message: string; exitCode: number | undefined };

/**
 * One debugger's connection, wherever it comes from: a TCP socket on this host (`socketConnection`)
 * or a stream relayed through a bench server (harness/debug/relayed-debugger.ts). Text is RSP in
 * latin1 (one char per byte).
 */
export interface DebuggerConnection {
  write(text: string): void;
  /** Writes `text` (if any), then closes. */
  end(text?: string): void;
  /** Closes at once. */
  destroy(): void;
  readonly destroyed: boolean;
  onData(listener: (text: string) => void): void;
  /** Once, when the connection has closed from either side. */
  onClose(listener: () => void): void;
}

/** A TCP socket as a debugger connection. */
export function socketConnection(socket: net.Socket): DebuggerConnection {
  socket.setNoDelay(true);
  // A debugger whose host vanished without closing (a laptop lid) is noticed by TCP keepalive,
  // and then counts as disconnected: the idle timeout frees the board.
  socket.setKeepAlive(true, KEEPALIVE_MS);
  socket.on('error', () => undefined);
  return {
    write: (text) => void socket.write(Buffer.from(text, 'latin1')),
    end: (text) => void (text === undefined ? socket.end() : socket.end(Buffer.from(text, 'latin1'))),
    destroy: () => void socket.destroy(),
    get destroyed() {
      return socket.destroyed;
    },
    onData: (listener) => void socket.on('data', (data: Buffer) => listener(data.toString('latin1'))),
    onClose: (listener) => void socket.once('close', listener),
  };
}

export interface GdbBridgeOptions {
  /** The device's debug capability (flashed). */
  debug: DeviceDebug;
  /** A stream already attached (the core halted at reset), for the first debugger; later ones attach afresh. */
  firstStream?: GdbStream;
  /** Board id, for messages. */
  boardId: string;
  clock: Clock;
  /** Port on `host`; 0 picks a free one (`GdbBridge.port` says which). Absent: no listening; connections come through `accept`. */
  port?: number;
  /** Default 127.0.0.1: the debugger is on this host; a lab reaches boards through the server. */
  host?: string;
  /** With no debugger connected for this long (host ms), the bridge ends and the board is freed. */
  idleTimeoutMs: number;
  /** Bound on one packet from the debugger, bytes (default 64 KiB). */
  maxPacketBytes?: number;
  /** One line for the user (stderr in the CLI) about each connection. */
  log: (line: string) => void;
}

/**
 * Serves a device's GDB stream on a TCP port, one debugger at a time:
 * - the debugger's bytes are checked as RSP (`RspReader`) before they reach the target: a
 *   malformed or oversized packet closes that connection only; the device stays attached-ready
 *   and another debugger may connect;
 * - a second debugger while one is connected gets an `E.` reply naming the board and is closed;
 * - `D` (detach) or `k`/`vKill` (kill) from the debugger, or an exit reported by the target
 *   (`W`/`X`), ends the bridge once that debugger's connection closes;
 * - a debugger that vanishes (connection closed without detaching) leaves the core halted where
 *   it was; with nobody connected for `idleTimeoutMs` (from the start, too) the bridge ends
 *   `idle`, so an abandoned board is freed. The timer runs on the injected clock.
 * Each connection gets a fresh stream from `DeviceDebug.attach` (the core back at reset, halted).
 */
export class GdbBridge {
  readonly ended: Promise<GdbBridgeEnd>;
  private settle: (end: GdbBridgeEnd) => void = () => undefined;
  private readonly server: net.Server | undefined;
  private active: { socket: DebuggerConnection; stream?: GdbStream; ending?: GdbBridgeEnd } | undefined;
  private idleTimer: TimerHandle | undefined;
  private finished = false;
  private firstStream: GdbStream | undefined;
  /** Settles once the last debugger's stream is closed: the next attach waits for it (a target takes one stream at a time). */
  private released: Promise<unknown> = Promise.resolve();

  private constructor(private readonly options: GdbBridgeOptions) {
    this.firstStream = options.firstStream;
    this.ended = new Promise((resolve) => (this.settle = resolve));
    this.server = options.port === undefined ? undefined : net.createServer((socket) => this.accept(socketConnection(socket)));
  }

  /** Listens on `options.port` (when given) and starts the idle timer. */
  static async start(options: GdbBridgeOptions): Promise<GdbBridge> {
    const bridge = new GdbBridge(options);
    const { server } = bridge;
    if (server) {
      const host = options.host ?? '127.0.0.1';
      await new Promise<void>((resolve, reject) => {
        server.once('error', (err: NodeJS.ErrnoException) =>
          reject(new BackendError('unavailable', `cannot serve GDB on ${host}:${options.port}: ${err.code === 'EADDRINUSE' ? 'the port is taken (choose another with --gdb-port)' : err.message}`, { cause: err })),
        );
        server.listen(options.port, host, () => {
          server.removeAllListeners('error');
          resolve();
        });
      });
    }
    bridge.armIdleTimer();
    return bridge;
  }

  /** The port it listens on (0 when it does not listen). */
  get port(): number {
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.port : (this.options.port ?? 0);
  }

  /** Ends the bridge: closes the debugger's connection and stream, stops listening. */
  async stop(message = 'stopped by the bench'): Promise<void> {
    this.finish({ reason: 'stopped', message });
    await this.ended;
  }

  /** Takes one debugger's connection (the TCP server calls it for each socket; a relay for each stream). */
  accept(socket: DebuggerConnection): void {
    if (this.finished) {
      socket.destroy();
      return;
    }
    if (this.active) {
      const message = `board ${this.options.boardId} already has a debugger attached (one at a time)`;
      this.options.log(`refused a second debugger: ${message}`);
      socket.end(`+${rspPacket(`E.${message}`)}`);
      return;
    }
    this.disarmIdleTimer();
    const connection: NonNullable<GdbBridge['active']> = { socket };
    this.active = connection;
    const reader = new RspReader({ maxPacketBytes: this.options.maxPacketBytes ?? DEFAULT_MAX_PACKET_BYTES });
    const exitScan = new ExitReplyScan();
    const pending: string[] = [];
    let stream: GdbStream | undefined;
    const toTarget = (text: string) => (stream ? stream.write(text) : pending.push(text));

    socket.onData((data) => {
      // Only whole, well-framed units reach the target: a packet still arriving stays here, so an
      // oversized or broken one never gets a byte of itself past the bridge. What goes on is the
      // bytes themselves, untouched: the part of what the reader held and `data` that it consumed.
      const heldBefore = reader.held;
      try {
        for (const event of reader.feed(data)) {
          if (event.kind !== 'packet' || !event.checksumOk) continue;
          const { payload } = event;
          if (payload[0] === 'D') connection.ending = { reason: 'detached', message: 'the debugger detached; the firmware runs on' };
          else if (payload === 'k' || payload.startsWith('vKill')) connection.ending = { reason: 'killed', message: 'the debugger killed the target' };
        }
      } catch (err) {
        if (!(err instanceof RspProtocolError)) throw err;
        this.options.log(`closed the debugger's connection: it sent what is not GDB's remote protocol (${err.message}); the board waits for another`);
        socket.destroy();
        return;
      }
      const heldAfter = reader.held.length;
      if (heldBefore.length === 0 && heldAfter === 0) toTarget(data);
      else if (heldBefore.length + data.length > heldAfter) toTarget((heldBefore + data).slice(0, heldBefore.length + data.length - heldAfter));
    });
    socket.onClose(() => {
      if (this.active === connection) this.active = undefined;
      this.released = ready.then((opened) => opened.close(), () => undefined);
      if (connection.ending) this.finish(connection.ending);
      else if (!this.finished) {
        this.options.log(`the debugger disconnected without detaching; the core stays halted until one connects again (or ${this.options.idleTimeoutMs / 1000} s pass)`);
        this.armIdleTimer();
      }
    });

    const first = this.firstStream;
    const ready = first ? Promise.resolve(first) : this.released.then(() => this.options.debug.attach());
    this.firstStream = undefined;
    ready.then(
      (opened) => {
        if (socket.destroyed) {
          void opened.close();
          return;
        }
        stream = opened;
        connection.stream = opened;
        opened.onData((text) => {
          // Only an exit reply matters here; every other byte goes to the debugger as it came.
          const exit = connection.ending ? undefined : exitScan.feed(text);
          if (exit) {
            connection.ending =
              exit.kind === 'W'
                ? { reason: 'exited', message: `the firmware exited with status ${exit.status} under the debugger`, exitCode: exit.status }
                : { reason: 'exited', message: `the target was terminated by signal ${exit.status} under the debugger`, exitCode: undefined };
          }
          socket.write(text);
        });
        void opened.closed.then(({ reason }) => {
          // The target ended the session (a detach or kill it answered): the reply is written; close.
          if (!socket.destroyed) socket.end();
          if (this.active === connection && !connection.ending) this.options.log(`the target ended the debug session: ${reason}`);
        });
        for (const text of pending.splice(0)) opened.write(text);
      },
      (err: unknown) => {
        const message = `could not attach to ${this.options.boardId}: ${(err as Error).message}`;
        this.options.log(message);
        socket.end(`+${rspPacket(`E.${message}`)}`);
      },
    );
  }

  private armIdleTimer() {
    this.disarmIdleTimer();
    const { idleTimeoutMs } = this.options;
    this.idleTimer = this.options.clock.setTimeout(
      () => this.finish({ reason: 'idle', message: `no debugger connected for ${idleTimeoutMs / 1000} s: the board is freed` }),
      idleTimeoutMs,
    );
  }

  private disarmIdleTimer() {
    if (this.idleTimer !== undefined) this.options.clock.clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private finish(end: GdbBridgeEnd) {
    if (this.finished) return;
    this.finished = true;
    this.disarmIdleTimer();
    const active = this.active;
    this.active = undefined;
    void this.firstStream?.close();
    void active?.stream?.close();
    active?.socket.destroy();
    if (this.server) this.server.close(() => this.settle(end));
    else this.settle(end);
  }
}
