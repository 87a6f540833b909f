import net from 'node:net';
import { BackendError, type DeviceDebug, type GdbStream, type ServedGdbEvents, type ServedGdbPort } from '../../backends/backend.js';
import type { DebugLegAddress } from '../../clients/bench/debug-leg.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { type DebuggerConnection, socketConnection } from '../../core/gdb/debugger-connection.js';
import type { DebuggerEnding } from '../../core/gdb/debugger-gate.js';
import { DebuggerSlot } from '../../core/gdb/debugger-slot.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { DEFAULT_MAX_PACKET_BYTES } from '../../core/gdb/rsp-reader.js';

/**
 * How a bridge ended: the debugger detached or killed the target, the firmware exited under it,
 * nobody debugged for the idle timeout, the bench stopped it, or the engine serving the port
 * failed.
 */
export type GdbBridgeEnd = DebuggerEnding | { reason: 'idle' | 'stopped' | 'failed'; message: string };

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
  /**
   * A worker's debug job: where its legs are dialled. A device that serves GDB itself dials them
   * (`DeviceDebug.serve` with `relay`: the sim engine's thread, decision 0910) and the bridge takes
   * no `accept`ed connections (`relayedByDevice`); for any other the worker's pump brings them to `accept`.
   */
  relay?: DebugLegAddress;
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
 * Serves a device's GDB stream on a TCP port, one debugger at a time, by the rules of
 * `DebuggerSlot` (core/gdb/debugger-slot.ts: a second debugger refused, the debugger's bytes
 * checked as RSP before the target so a malformed or oversized packet closes that connection only,
 * a detach, kill or exit ending the bridge once that connection closes, each debugger's target
 * attached afresh from `DeviceDebug.attach`, the core back at reset, halted). The bridge adds the
 * time: a debugger that vanishes (its connection closed without detaching) leaves the core halted
 * where it was, and with nobody connected for `idleTimeoutMs` (from the start, too) the bridge ends
 * `idle`, so an abandoned board is freed. The timer runs on the injected clock.
 *
 * A device that serves GDB itself (`DeviceDebug.serve`: the sim backend's engine thread) serves
 * the port instead, with the same slot in its thread, so a read wakes no thread but the engine's
 * (decision 0740); the bridge then keeps only the idle timer, the log and the end, told by the
 * same events. Such a bridge takes no `accept`ed connections.
 */
export class GdbBridge {
  readonly ended: Promise<GdbBridgeEnd>;
  private settle: (end: GdbBridgeEnd) => void = () => undefined;
  private server: net.Server | undefined;
  /** The port the device serves itself, when it does. */
  private served: ServedGdbPort | undefined;
  /** The debuggers of a port this bridge serves (absent when the device serves it). */
  private slot: DebuggerSlot | undefined;
  private idleTimer: TimerHandle | undefined;
  private finished = false;

  private constructor(private readonly options: GdbBridgeOptions) {
    this.ended = new Promise((resolve) => (this.settle = resolve));
  }

  /** Listens on `options.port` (when given; the device serves it when it can) and starts the idle timer. */
  static async start(options: GdbBridgeOptions): Promise<GdbBridge> {
    const bridge = new GdbBridge(options);
    const { debug, signal } = options;
    if ((options.port !== undefined || options.relay) && debug.serve) {
      await options.firstStream?.close();
      const where = { port: options.port ?? 0, host: options.host ?? '127.0.0.1', ...(options.relay ? { relay: options.relay } : {}) };
      bridge.served = await debug.serve({ ...where, maxPacketBytes: bridge.maxPacketBytes, events: bridge.events(), signal });
      void bridge.served.closed.then(({ reason }) => bridge.finish({ reason: 'failed', message: `the board's GDB port closed: ${reason}` }));
      bridge.armIdleTimer();
      return bridge;
    }
    const first: GdbStream | undefined = options.firstStream ?? (options.attachFirst ? await debug.attach({ signal }) : undefined);
    bridge.slot = new DebuggerSlot({
      boardId: options.boardId,
      maxPacketBytes: bridge.maxPacketBytes,
      attach: () => debug.attach(),
      first,
      events: bridge.events(),
      targetEnded: (reason) => options.log(`the target ended the debug session: ${reason}`),
    });
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

  /** True when the device dials the relayed debuggers' legs itself (`relay` and `DeviceDebug.serve`): nothing is to be `accept`ed. */
  get relayedByDevice(): boolean {
    return this.served !== undefined && this.options.relay !== undefined;
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

  /** What the slot (here, or in the engine's thread) tells the bridge: the idle timer and the log follow its connections. */
  private events(): ServedGdbEvents {
    return {
      connected: () => this.disarmIdleTimer(),
      refused: (message) => this.logRefusal(message),
      protocolError: (message) => this.options.log(`closed the debugger's connection: it sent what is not GDB's remote protocol (${message}); the board waits for another`),
      attachFailed: (message) => this.options.log(message),
      disconnected: (ending) => (ending ? this.finish(ending) : this.disconnected()),
      legTrouble: (message) => this.options.log(message),
    };
  }

  private logRefusal(message: string) {
    this.options.log(`refused a second debugger: ${message}`);
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
  accept(connection: DebuggerConnection): void {
    if (this.finished) {
      connection.destroy();
      return;
    }
    if (this.served) {
      const message = `board ${this.options.boardId} serves its debugger on 127.0.0.1:${this.served.port} only`;
      this.logRefusal(message);
      connection.end(`+${rspPacket(`E.${message}`)}`);
      return;
    }
    this.slot!.accept(connection);
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
    this.slot?.close();
    const served = this.served?.close();
    if (this.server) this.server.close(() => this.settle(end));
    else if (served) void served.then(() => this.settle(end));
    else this.settle(end);
  }
}
