import type { DebuggerConnection } from './debugger-connection.js';
import { type DebuggerEnding, DebuggerGate, secondDebuggerMessage } from './debugger-gate.js';
import { rspPacket } from './rsp-packet.js';
import { RspProtocolError } from './rsp-reader.js';

/**
 * Packets a debugger may have sent and the target not yet answered before its connection is held
 * (not read). GDB has one at a time (and `^C`, no packet); a few pipelined are fine.
 */
export const MAX_UNANSWERED_PACKETS = 16;

/** The words of the `E.` reply that ends a connection whose bytes were not RSP (`message`: how). */
export function protocolErrorMessage(message: string): string {
  return `the debugger sent what is not GDB's remote protocol (${message}); this stream is closed, the board waits for another`;
}

/**
 * What a debugger talks to through the slot: the device's GDB stream (`GdbStream`,
 * backends/backend.ts) or a session beside the stub in an engine's thread.
 */
export interface DebugTarget {
  /** The debugger's bytes, whole units only (the slot's gate cut them). */
  write(text: string): void;
  /** The target's bytes for the debugger. */
  onData(listener: (text: string) => void): unknown;
  /** Resolves when the target ended the session (a detach or kill it answered), or it was closed, with why. */
  readonly closed: Promise<{ reason: string }>;
  /** Ends the session; the core stays where it is. Safe to call twice. */
  close(): unknown;
}

/** What a slot tells its owner about its debuggers, in order (the host's bridge keeps its idle timer and log by these). */
export interface DebuggerEvents {
  /** A debugger's connection was taken (nobody else was connected). */
  connected(): void;
  /** A second debugger was refused with `message` (an `E.` reply); the first goes on. */
  refused(message: string): void;
  /** The debugger's bytes were not GDB's remote protocol (`message` says how): its connection is ended with an `E.` reply, and the slot is free (`disconnected` follows at once). */
  protocolError(message: string): void;
  /** The connection could not get its target (`message`): it was closed. */
  attachFailed(message: string): void;
  /** The debugger's connection closed; `ending` when that ends the debugging (no more are taken then). */
  disconnected(ending: DebuggerEnding | undefined): void;
}

export interface DebuggerSlotOptions {
  /** Board id, for messages. */
  boardId: string;
  /** Bound on one packet from the debugger, bytes. */
  maxPacketBytes: number;
  /** A fresh target for the next debugger (the core back at reset, halted); asked once the last one's target is closed. */
  attach(): Promise<DebugTarget>;
  /** The first debugger's target, opened ahead (the board's refusal then came before the port was offered). */
  first?: DebugTarget;
  events: DebuggerEvents;
  /** The target ended a session its debugger had not ended (no detach, kill or exit seen), with why. */
  targetEnded?(reason: string): void;
}

/**
 * One debugger at a time on one board, wherever its connections come from and wherever the
 * target is (issue 32; decision 0811): the host's bridge (harness/debug/gdb-bridge.ts: TCP, or
 * streams relayed through a bench server) and the port an engine's thread serves
 * (backends/sim/sim-thread-gdb-port.ts) both take their connections here, so the rules are one
 * implementation:
 * - a second debugger while one is connected gets an `E.` reply naming the board and is closed;
 * - the debugger's bytes pass a `DebuggerGate` before the target: a malformed or oversized packet
 *   ends that connection only, with an `E.` reply saying why, and frees the slot at once for the
 *   next debugger;
 * - each debugger gets its own target (the first the one opened ahead, later ones attached once the
 *   last target is closed), and what it sent before the target was ready follows in order;
 * - a detach, a kill or an exit reply makes that connection's close the end: no debugger is taken
 *   after it; any other close leaves the core where it was, for the next debugger.
 * The slot keeps no time: the owner's idle timer follows `events`.
 */
export class DebuggerSlot {
  private active: { connection: DebuggerConnection; target: DebugTarget | undefined; left: boolean } | undefined;
  private first: DebugTarget | undefined;
  /** Settles once the last debugger's target is closed: a target takes one session at a time. */
  private released: Promise<unknown> = Promise.resolve();
  /** False once the debugging ended or the owner closed the slot: connections are then closed at once. */
  private accepting = true;
  private shut = false;

  constructor(private readonly options: DebuggerSlotOptions) {
    this.first = options.first;
  }

  /** Takes one debugger's connection. */
  accept(connection: DebuggerConnection): void {
    const { events, boardId } = this.options;
    if (!this.accepting) {
      connection.destroy();
      return;
    }
    if (this.active) {
      const message = secondDebuggerMessage(boardId);
      events.refused(message);
      connection.end(`+${rspPacket(`E.${message}`)}`);
      return;
    }
    events.connected();
    // The gate lets only whole, well-framed units reach the target, as the bytes themselves.
    const gate = new DebuggerGate({ maxPacketBytes: this.options.maxPacketBytes });
    const seat: NonNullable<DebuggerSlot['active']> = { connection, target: undefined, left: false };
    this.active = seat;
    const pending: string[] = [];
    // Packets sent to the target and not yet answered. GDB waits for each answer; a debugger that
    // sends on regardless is held (its connection not read) past MAX_UNANSWERED_PACKETS, so a flood
    // waits in the kernel's buffers and the sender's, not in a queue to the target here or in an
    // engine's thread.
    let unanswered = 0;
    let targetGone = false;
    // The debugger ended its side (a half-close): its connection ends once what it sent is answered
    // (a kill has no answer). Until then it stays, as a silent debugger does: a target that never
    // answers (a continue that never stops) holds it until the job's deadline, or, relayed, until
    // the server cuts the half-closed stream (SPLICE_LINGER_MS).
    let debuggerEnded = false;
    const endIfAnswered = () => {
      if (debuggerEnded && (unanswered === 0 || targetGone || gate.ending?.reason === 'killed') && !connection.destroyed) connection.end();
    };
    const first = this.first;
    this.first = undefined;
    const ready = first ? Promise.resolve(first) : this.released.then(() => this.options.attach());

    /** The seat is given up (its connection closed, or its bytes were refused): the target is released and the next debugger may come. Once. */
    const leave = () => {
      if (seat.left) return;
      seat.left = true;
      if (this.active === seat) this.active = undefined;
      this.released = ready.then(
        (target) => target.close(),
        () => undefined,
      );
      if (this.shut) return;
      // The debugging is over: nobody else is taken while the owner ends it.
      if (gate.ending) this.accepting = false;
      events.disconnected(gate.ending);
    };
    connection.onData((data) => {
      if (seat.left) return;
      let forward: { bytes: string; packets: number };
      try {
        forward = gate.fromDebugger(data);
      } catch (err) {
        if (!(err instanceof RspProtocolError)) throw err;
        events.protocolError(err.message);
        // Freed at once, not on the close (a relayed stream closes only once the far end has
        // read the reply): the debugger reads why as its last bytes, an `E.` reply.
        leave();
        connection.end(`+${rspPacket(`E.${protocolErrorMessage(err.message)}`)}`);
        return;
      }
      if (forward.bytes.length === 0 || targetGone) return;
      // Only a packet with a valid checksum is answered: a stub answers a wrong one with a `-` at
      // most (the debugger resends it, counted then), and in no-ack mode drops it.
      unanswered += forward.packets;
      if (unanswered > MAX_UNANSWERED_PACKETS) connection.hold(true);
      if (seat.target) seat.target.write(forward.bytes);
      else pending.push(forward.bytes);
    });
    connection.onEnd(() => {
      debuggerEnded = true;
      endIfAnswered();
    });
    connection.onClose(leave);
    ready.then(
      (target) => {
        if (connection.destroyed || seat.left) {
          void target.close();
          return;
        }
        seat.target = target;
        target.onData((text) => {
          // The gate counts answers (console output, `O` packets, is none) and notes an exit; every byte goes to the debugger as it came.
          const answers = gate.fromTarget(text);
          const wasHeld = unanswered > MAX_UNANSWERED_PACKETS;
          // A target may answer more than was counted (a stop reply to a 0x03, a reply resent after the debugger's `-`): a looser bound, never a stuck one.
          unanswered = Math.max(0, unanswered - answers);
          if (wasHeld && unanswered <= MAX_UNANSWERED_PACKETS) connection.hold(false);
          if (!connection.destroyed) connection.write(text);
          endIfAnswered();
        });
        void target.closed.then(({ reason }) => {
          // The target ended the session (a detach or kill it answered): its reply is written; close.
          // Nothing more goes to it: what the debugger still sends is read and dropped until its close.
          targetGone = true;
          if (!connection.destroyed) connection.end();
          if (this.active === seat && !gate.ending && !this.shut) this.options.targetEnded?.(reason);
        });
        for (const text of pending.splice(0)) target.write(text);
      },
      (err: unknown) => {
        const message = `could not attach to ${boardId}: ${err instanceof Error ? err.message : String(err)}`;
        if (!this.shut) events.attachFailed(message);
        targetGone = true;
        connection.end(`+${rspPacket(`E.${message}`)}`);
      },
    );
  }

  /** No more debuggers: the connected one's connection and target close (the core stays where it is), and so does a target opened ahead. Safe to call twice. */
  close(): void {
    if (this.shut) return;
    this.shut = true;
    this.accepting = false;
    void this.first?.close();
    this.first = undefined;
    const active = this.active;
    this.active = undefined;
    void active?.target?.close();
    active?.connection.destroy();
  }
}
