import net from 'node:net';
import { BackendError, type DeviceDebug, type GdbStream, type ServedGdbPort } from '../../backends/backend.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { type DebuggerEnding, DebuggerGate, secondDebuggerMessage } from '../../core/gdb/debugger-gate.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { DEFAULT_MAX_PACKET_BYTES, RspProtocolError } from '../../core/gdb/rsp-reader.js';

/** Idle time before TCP keepalive probes a debugger's connection, ms. */
const KEEPALIVE_MS = 10_000;

/**
 * How a bridge ended: the debugger detached or killed the target, the firmware exited under it,
 * nobody debugged for the idle timeout, the bench stopped it, or the engine serving the port
 * failed.
 */
export type GdbBridgeEnd = DebuggerEnding | { reason: 'idle' | 'stopped' | 'failed'; message: string };

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
  /**
   * Attach before the port is offered (when no `firstStream` is given), as `hilbench debug` does:
   * a board that cannot be debugged is refused by `start`, and the first debugger finds the core
   * halted at reset, an attach (for QEMU a restart) no part of its `target remote`.
   */
  attachFirst?: boolean;
  /** Aborts an attach or serve in `start`. */
  signal?: AbortSignal;
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
 *
 * A device that serves GDB itself (`DeviceDebug.serve`: the sim backend's engine thread) serves
 * the port instead, with the same rules (`DebuggerGate`), so a read wakes no thread but the
 * engine's (decision 0740); the bridge then keeps only the idle timer, the log and the end, told
 * by the port's events. Such a bridge takes no `accept`ed connections.
 */
export class GdbBridge {
  readonly ended: Promise<GdbBridgeEnd>;
  private settle: (end: GdbBridgeEnd) => void = () => undefined;
  private server: net.Server | undefined;
  /** The port the device serves itself, when it does. */
  private served: ServedGdbPort | undefined;
  private active: { socket: DebuggerConnection; stream?: GdbStream; gate: DebuggerGate } | undefined;
  private idleTimer: TimerHandle | undefined;
  private finished = false;
  private firstStream: GdbStream | undefined;
  /** Settles once the last debugger's stream is closed: the next attach waits for it (a target takes one stream at a time). */
  private released: Promise<unknown> = Promise.resolve();

  private constructor(private readonly options: GdbBridgeOptions) {
    this.firstStream = options.firstStream;
    this.ended = new Promise((resolve) => (this.settle = resolve));
  }

  /** Listens on `options.port` (when given; the device serves it when it can) and starts the idle timer. */
  static async start(options: GdbBridgeOptions): Promise<GdbBridge> {
    const bridge = new GdbBridge(options);
    const { debug, signal } = options;
    if (options.port !== undefined && debug.serve) {
      await options.firstStream?.close();
      bridge.served = await debug.serve({ port: options.port, host: options.host ?? '127.0.0.1', maxPacketBytes: bridge.maxPacketBytes, events: bridge.servedEvents(), signal });
      void bridge.served.closed.then(({ reason }) => bridge.finish({ reason: 'failed', message: `the board's GDB port closed: ${reason}` }));
      bridge.armIdleTimer();
      return bridge;
    }
    if (options.attachFirst && !bridge.firstStream) bridge.firstStream = await debug.attach({ signal });
    if (options.port !== undefined) {
      const server = net.createServer((socket) => bridge.accept(socketConnection(socket)));
      bridge.server = server;
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
    if (this.served) return this.served.port;
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.port : (this.options.port ?? 0);
  }

  private get maxPacketBytes(): number {
    return this.options.maxPacketBytes ?? DEFAULT_MAX_PACKET_BYTES;
  }

  /** What a port the device serves tells the bridge: the idle timer and the log follow its connections. */
  private servedEvents() {
    return {
      connected: () => this.disarmIdleTimer(),
      refused: (message: string) => this.logRefusal(message),
      protocolError: (message: string) => this.logProtocolError(message),
      attachFailed: (message: string) => this.options.log(message),
      disconnected: (ending: DebuggerEnding | undefined) => (ending ? this.finish(ending) : this.disconnected()),
    };
  }

  private logRefusal(message: string) {
    this.options.log(`refused a second debugger: ${message}`);
  }

  private logProtocolError(message: string) {
    this.options.log(`closed the debugger's connection: it sent what is not GDB's remote protocol (${message}); the board waits for another`);
  }

  /** A debugger went without ending the debugging: wait for the next one, for the idle timeout at most. */
  private disconnected() {
    if (this.finished) return;
    this.options.log(`the debugger disconnected without detaching; the core stays halted until one connects again (or ${this.options.idleTimeoutMs / 1000} s pass)`);
    this.armIdleTimer();
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
    if (this.served) {
      const message = `board ${this.options.boardId} serves its debugger on 127.0.0.1:${this.served.port} only`;
      this.logRefusal(message);
      socket.end(`+${rspPacket(`E.${message}`)}`);
      return;
    }
    if (this.active) {
      const message = secondDebuggerMessage(this.options.boardId);
      this.logRefusal(message);
      socket.end(`+${rspPacket(`E.${message}`)}`);
      return;
    }
    this.disarmIdleTimer();
    // The gate lets only whole, well-framed units reach the target, as the bytes themselves.
    const gate = new DebuggerGate({ maxPacketBytes: this.maxPacketBytes });
    const connection: NonNullable<GdbBridge['active']> = { socket, gate };
    this.active = connection;
    const pending: string[] = [];
    let stream: GdbStream | undefined;

    socket.onData((data) => {
      let forward: string;
      try {
        forward = gate.fromDebugger(data);
      } catch (err) {
        if (!(err instanceof RspProtocolError)) throw err;
        this.logProtocolError(err.message);
        socket.destroy();
        return;
      }
      if (forward.length === 0) return;
      if (stream) stream.write(forward);
      else pending.push(forward);
    });
    socket.onClose(() => {
      if (this.active === connection) this.active = undefined;
      this.released = ready.then((opened) => opened.close(), () => undefined);
      if (gate.ending) this.finish(gate.ending);
      else this.disconnected();
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
          gate.fromTarget(text);
          socket.write(text);
        });
        void opened.closed.then(({ reason }) => {
          // The target ended the session (a detach or kill it answered): the reply is written; close.
          if (!socket.destroyed) socket.end();
          if (this.active === connection && !gate.ending) this.options.log(`the target ended the debug session: ${reason}`);
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
    const served = this.served?.close();
    if (this.server) this.server.close(() => this.settle(end));
    else if (served) void served.then(() => this.settle(end));
    else this.settle(end);
  }
}
