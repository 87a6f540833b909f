import { GDBConnection, GDBServer } from 'rp2040js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { RspProtocolError, RspReader } from '../../core/gdb/rsp-reader.js';
import type { Rp2040Engine } from '../rp2040-engine.js';
import { haltStopReply, runUntilDebugStop, type SimGdbEnd, type SimGdbIo, type SimGdbTarget } from '../sim-gdb-target.js';

/** `bkpt 0xab` is an ARM semihosting call (the exit convention), never a debugger's breakpoint. */
const SEMIHOSTING_BKPT = 0xab;
/** rp2040js advertises PacketSize=4000 (hex); a packet from GDB is never longer than twice that plus framing. */
const MAX_PACKET_BYTES = 0x8000 + 64;

/** Unwinds rp2040js out of the instruction that hit a debugger breakpoint. */
class DebugBreak extends Error {}

/**
 * A GDB stub for the RP2040 on rp2040js: rp2040js's own `GDBServer` and `GDBConnection`, used
 * through their API, with what a bench needs around them:
 * - execution: the server's target runs the engine (`Rp2040Engine.advance`, with the own boot ROM
 *   and the semihosting exit) in slices instead of rp2040js's `Simulator`;
 * - breakpoints: GDB writes `bkpt` into flash; the server's break handler stops and reports it,
 *   and a thrown `DebugBreak` unwinds the engine's slice; `bkpt 0xab` stays a semihosting call;
 * - detach (`D`) and kill (`k`, `vKill`), which rp2040js's server does not answer, are answered
 *   here; an exit or crash is reported (`W`, `S0b`), which rp2040js cannot know about;
 * - a memory read the chip would fault on answers `E01` instead of halting the engine.
 */
export class Rp2040GdbTarget implements SimGdbTarget {
  private readonly reader = new RspReader({ maxPacketBytes: MAX_PACKET_BYTES });
  private readonly connection: GDBConnection;
  private readonly engineBreak: (code: number) => void;
  private continuing = false;
  private stopRequested = false;
  private closed = false;

  constructor(
    private readonly engine: Rp2040Engine,
    private readonly io: SimGdbIo,
  ) {
    const { rp2040 } = engine;
    this.engineBreak = rp2040.onBreak;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the server's target object reads this stub's state
    const self = this;
    const server = new GDBServer({
      rp2040,
      get executing() {
        return self.continuing && !self.stopRequested;
      },
      execute: () => void this.continue(),
      stop: () => {
        this.stopRequested = true;
      },
    });
    const quiet = () => undefined;
    server.logger = { debug: quiet, info: quiet, warn: quiet, error: quiet };
    // The connection registers itself and installs the server's break handler on the chip.
    this.connection = new GDBConnection(server, (text) => {
      if (!this.closed) this.io.send(text);
    });
    const debuggerBreak = rp2040.onBreak;
    rp2040.onBreak = (code) => {
      if (code === SEMIHOSTING_BKPT) return this.engineBreak(code);
      debuggerBreak(code);
      throw new DebugBreak();
    };
  }

  get running(): boolean {
    return this.continuing;
  }

  receive(text: string): void {
    if (this.closed) return;
    let events;
    try {
      events = this.reader.feed(text);
    } catch (err) {
      if (!(err instanceof RspProtocolError)) throw err;
      return this.end({ how: 'protocol-error', message: err.message });
    }
    for (const event of events) {
      if (this.closed) return;
      if (event.kind === 'interrupt') this.feed('\x03');
      else if (event.kind === 'packet') {
        const { payload } = event;
        if (event.checksumOk && (payload[0] === 'D' || payload === 'k' || payload.startsWith('vKill'))) {
          this.io.send('+');
          if (payload !== 'k') this.io.send(rspPacket('OK'));
          this.end({ how: payload[0] === 'D' ? 'detached' : 'killed' });
        } else if (!this.continuing) this.feed(event.raw);
      }
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopRequested = true;
    // After the debugger, a `bkpt` is the HardFault it is on a chip without one (the engine's handler).
    this.engine.rp2040.onBreak = this.engineBreak;
  }

  private feed(text: string) {
    try {
      this.connection.feedData(text);
    } catch {
      // The engine turns a chip fault (a read of an unmapped address) into an exception; for a
      // debugger's memory read that is an error reply, and the chip is untouched.
      this.io.send(rspPacket('E01'));
    }
  }

  private async continue(): Promise<void> {
    if (this.continuing) return;
    const { engine } = this;
    this.continuing = true;
    this.stopRequested = false;
    const stop = await runUntilDebugStop({
      slice: (targetNanos) => {
        try {
          return { halt: engine.advance(targetNanos), breakpoint: false };
        } catch (err) {
          if (err instanceof DebugBreak) return { breakpoint: true };
          throw err;
        }
      },
      nanos: () => engine.nanos,
      takeUart: () => engine.takeUartOutput({ partial: true }),
      io: this.io,
      stopRequested: () => (this.closed ? 'closed' : this.stopRequested ? 'interrupted' : undefined),
    });
    this.continuing = false;
    // rp2040js's server has already sent the stop reply of a breakpoint or an interrupt.
    if (stop.kind === 'halted' && !this.closed) this.io.send(rspPacket(haltStopReply(stop.halt)));
  }

  private end(end: SimGdbEnd) {
    if (this.closed) return;
    this.close();
    this.io.onEnd(end);
  }
}
