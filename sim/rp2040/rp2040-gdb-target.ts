import { GDBConnection, GDBServer, type RP2040 } from 'rp2040js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { protocolErrorMessage } from '../../core/gdb/debugger-slot.js';
import { DEFAULT_MAX_PACKET_BYTES, RspProtocolError, RspReader } from '../../core/gdb/rsp-reader.js';
import type { Rp2040Engine } from '../rp2040-engine.js';
import { GdbCoreThreads, haltStopReply, RUNNING_PACKET_REPLY, runUntilDebugStop, type SimGdbEnd, type SimGdbIo, type SimGdbTarget } from '../sim-gdb-target.js';

/** `bkpt 0xab` is an ARM semihosting call (the exit convention), never a debugger's breakpoint. */
const SEMIHOSTING_BKPT = 0xab;

/** Unwinds rp2040js out of the instruction that hit a debugger breakpoint. */
class DebugBreak extends Error {}

/** GDB's thread id of core 1 (core 0 is thread 1). */
const CORE1_THREAD = 2;

type Core = RP2040['core'];

/**
 * A GDB stub for the RP2040 on rp2040js: rp2040js's own `GDBServer` and `GDBConnection`, used
 * through their API, with what a bench needs around them:
 * - execution: the server's target runs the engine (`Rp2040Engine.advance`, with the own boot ROM
 *   and the semihosting exit) in slices instead of rp2040js's `Simulator`;
 * - breakpoints: GDB writes `bkpt` into flash; the server's break handler stops and reports it,
 *   and a thrown `DebugBreak` unwinds the engine's slice; `bkpt 0xab` stays a semihosting call;
 * - detach (`D`) and kill (`k`, `vKill`), which rp2040js's server does not answer, are answered
 *   here; an exit or crash is reported (`W`, `S0b`), which rp2040js cannot know about;
 * - a memory read the chip would fault on answers `E01` instead of halting the engine;
 * - both cores as GDB threads (1: core 0, 2: core 1; `GdbCoreThreads`): rp2040js's server knows
 *   one core (`rp2040.core`), so a register packet for core 1, or a step of it, is handed to the
 *   server with core 1's core object in `rp2040.core` for that one synchronous call. A breakpoint
 *   either core runs into stops the chip, and the stop reply names the core's thread. Memory is
 *   read through the chip, as core 0 sees it (SIO and the private peripherals are per core).
 */
export class Rp2040GdbTarget implements SimGdbTarget {
  // rp2040js advertises PacketSize=4000 (hex), but the debugger slot in front bounds a packet at
  // DEFAULT_MAX_PACKET_BYTES: a tighter bound here would end the session on a packet it let through.
  private readonly reader = new RspReader({ maxPacketBytes: DEFAULT_MAX_PACKET_BYTES });
  private readonly connection: GDBConnection;
  private readonly engineBreak: (code: number) => void;
  private readonly engineCore1Break: (code: number) => void;
  private readonly threads: GdbCoreThreads;
  private continuing = false;
  private stopRequested = false;
  private closed = false;

  constructor(
    private readonly engine: Rp2040Engine,
    private readonly io: SimGdbIo,
  ) {
    const { rp2040 } = engine;
    this.engineBreak = rp2040.onBreak;
    this.engineCore1Break = engine.core1Break;
    this.threads = new GdbCoreThreads([() => 'core 0', () => `core 1 (${describeCore1(engine.core1.state)})`]);
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
      if (!this.closed) this.io.send(this.namedStop(text));
    });
    const debuggerBreak = rp2040.onBreak;
    rp2040.onBreak = (code) => {
      if (code === SEMIHOSTING_BKPT) return this.engineBreak(code);
      this.threads.stop(1);
      debuggerBreak(code);
      throw new DebugBreak();
    };
    // What rp2040js's break handler does for core 0, for core 1 (the server knows only core 0).
    engine.core1Break = (code) => {
      if (code === SEMIHOSTING_BKPT) return this.engineCore1Break(code);
      const core = engine.core1.core;
      this.stopRequested = true;
      core.PC -= core.breakRewind;
      this.threads.stop(CORE1_THREAD);
      this.connection.onBreakpoint();
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
      // The debugger reads why as its last bytes, as it does from the slot's own gate.
      this.io.send(rspPacket(`E.${protocolErrorMessage(err.message)}`));
      return this.end({ how: 'protocol-error', message: err.message });
    }
    for (const event of events) {
      if (this.closed) return;
      if (event.kind === 'interrupt') this.feed('\x03');
      else if (event.kind === 'packet') {
        const { payload } = event;
        const threadReply = event.checksumOk && !this.continuing ? this.threads.answer(payload) : undefined;
        if (event.checksumOk && (payload[0] === 'D' || payload === 'k' || payload.startsWith('vKill'))) {
          this.io.send('+');
          if (payload !== 'k') this.io.send(rspPacket('OK'));
          this.end({ how: payload[0] === 'D' ? 'detached' : 'killed' });
        } else if (threadReply !== undefined) this.io.send(`+${rspPacket(threadReply)}`);
        // rp2040js's server reads nothing while the chip runs: a packet then is refused here, never dropped.
        else if (this.continuing) this.io.send(event.checksumOk ? `+${rspPacket(RUNNING_PACKET_REPLY)}` : '-');
        else this.withCoreOf(payload, () => this.feed(event.raw));
      }
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopRequested = true;
    // After the debugger, a `bkpt` is the HardFault it is on a chip without one (the engine's handler).
    this.engine.rp2040.onBreak = this.engineBreak;
    this.engine.core1Break = this.engineCore1Break;
  }

  /**
   * Runs `handle` with the core `payload` is about in `rp2040.core`: the `Hg` thread for a
   * register packet, the step's thread (or `Hc`'s) for a step; core 0 for everything else.
   */
  private withCoreOf(payload: string, handle: () => void) {
    // The thread ids are ones that exist (`GdbCoreThreads.answer` refused the others with `E01`).
    const step = /^vCont;s(?::([0-9a-fA-F]+))?/.exec(payload);
    const stepped = step?.[1] === undefined ? 0 : parseInt(step[1], 16);
    const thread = /^[gGpP]/.test(payload) ? this.threads.registers : step ? stepped || this.threads.stepping : 1;
    if (step) this.threads.stop(thread);
    if (thread !== CORE1_THREAD) return handle();
    const chip = this.engine.rp2040 as { core: Core };
    const core0 = chip.core;
    chip.core = this.engine.core1.core;
    try {
      handle();
    } finally {
      chip.core = core0;
    }
  }

  /** rp2040js's stop replies (`S05`, `S02`, a step's `T05...`) with the thread that stopped. */
  private namedStop(text: string): string {
    const packet = /^\$([ST][^#]*)#[0-9a-fA-F]{2}$/.exec(text);
    return packet ? rspPacket(this.threads.namedStopReply(packet[1]!)) : text;
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

function describeCore1(state: 'off' | 'pen' | 'running'): string {
  if (state === 'off') return 'held in reset';
  return state === 'pen' ? "in the boot ROM's holding pen" : 'running';
}
