import { hexOfText } from '../core/gdb/rsp-packet.js';
import type { EngineHalt, EngineUartChunk } from './sim-engine.js';

/**
 * A GDB stub for one simulated chip, with a message-friendly interface: RSP text in (`receive`),
 * RSP text out (`SimGdbIo.send`), so it can live next to its engine in another thread and talk
 * through messages. Text is latin1, one character per byte. While the debugger lets the chip run
 * (continue), the stub runs the engine itself in slices and yields between them.
 */
export interface SimGdbTarget {
  /** Bytes from the debugger, as they arrive (any split). */
  receive(text: string): void;
  /** Stops the chip where it is and ends the stub; nothing more is sent. Safe to call twice. */
  close(): void;
  /** True while the debugger lets the chip run (a continue); false while it is halted. */
  readonly running: boolean;
}

/** How a stub's session ended: the debugger detached (the chip may run on) or killed, or sent what is not RSP. */
export type SimGdbEnd = { how: 'detached' } | { how: 'killed' } | { how: 'protocol-error'; message: string };

/** What a stub needs from its host. */
export interface SimGdbIo {
  /** RSP bytes for the debugger. */
  send(text: string): void;
  /** UART output the firmware produced while running under the debugger. */
  onUart(chunk: EngineUartChunk): void;
  /** Called once when the debugger ends the session; the stub sends nothing after it. */
  onEnd(end: SimGdbEnd): void;
  /** Simulated nanoseconds run between yields to the host while the debugger lets the chip run; default 1 ms. */
  sliceNanos?: number;
  /** Lets the host event loop in between slices; default `setImmediate`. */
  yieldToHost?: () => Promise<void>;
}

/** Why a debugged run stopped. */
export type DebugRunStop = { kind: 'breakpoint' } | { kind: 'interrupted' } | { kind: 'halted'; halt: EngineHalt } | { kind: 'closed' };

export const DEFAULT_DEBUG_SLICE_NANOS = 1_000_000;

/**
 * The reply (an `E.` error with its text) to a packet that comes while the chip runs. In all-stop
 * mode GDB sends nothing but 0x03 then (GDB manual, "Remote Protocol", "Stop Reply Packets"); a
 * client of its own may. Each packet gets an answer all the same: the debugger slot counts a packet
 * as pending until its answer (`MAX_UNANSWERED_PACKETS`), so one dropped unanswered would hold its
 * place for good, and enough of them would stop the slot reading the client, its 0x03 included.
 */
export const RUNNING_PACKET_REPLY = 'E.the target is running: only an interrupt (0x03) is read until it stops';
const setImmediateYield = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs a chip for a debugger until a breakpoint, an interrupt (0x03), a halt (exit, crash) or the
 * stub's close, in slices of simulated time with a yield to the host after each, so the stub can
 * read the debugger's interrupt and the host stays responsive.
 */
export async function runUntilDebugStop(options: {
  /** Runs one slice up to `targetNanos`; true in `breakpoint` when it stopped at one. */
  slice: (targetNanos: number) => { halt?: EngineHalt; breakpoint: boolean };
  nanos: () => number;
  takeUart: () => EngineUartChunk | undefined;
  io: SimGdbIo;
  /** Checked between slices: an interrupt or close asked the run to stop. */
  stopRequested: () => 'interrupted' | 'closed' | undefined;
}): Promise<DebugRunStop> {
  const { io } = options;
  const sliceNanos = io.sliceNanos ?? DEFAULT_DEBUG_SLICE_NANOS;
  const yieldToHost = io.yieldToHost ?? setImmediateYield;
  for (;;) {
    const requested = options.stopRequested();
    if (requested) return { kind: requested };
    let sliced: { halt?: EngineHalt; breakpoint: boolean };
    try {
      sliced = options.slice(options.nanos() + sliceNanos);
    } catch (err) {
      // What ends a normal run with a failure (a SimError: core 1 not modelled, a bad ROM call)
      // is, under a debugger, a stop at the faulting instruction that can be inspected.
      sliced = { halt: { reason: 'crashed', message: (err as Error).message }, breakpoint: false };
    }
    const { halt, breakpoint } = sliced;
    for (let chunk = options.takeUart(); chunk; chunk = options.takeUart()) io.onUart(chunk);
    if (halt) return { kind: 'halted', halt };
    if (breakpoint) return { kind: 'breakpoint' };
    await yieldToHost();
  }
}

/** The RSP stop reply for a halted chip: `W` with the exit status, or `S0b` (SIGSEGV) for a crash, so the debugger can still look around. */
export function haltStopReply(halt: EngineHalt): string {
  if (halt.reason === 'exited') return `W${(halt.exitCode & 0xff).toString(16).padStart(2, '0')}`;
  return 'S0b';
}

/**
 * The thread packets of GDB's remote protocol for a chip whose cores are GDB threads (ids from 1,
 * as GDB numbers them): `qfThreadInfo`/`qsThreadInfo` list them, `qC` names the one that stopped
 * last, `Hg`/`Hc` select the one whose registers are read and the one a step runs (0 and -1:
 * the one that stopped), `T` says whether one exists, `qThreadExtraInfo` describes it. Any other
 * id that names no thread, in these or in a `vCont` action, is `E01`. Stop replies name their
 * thread (`namedStopReply`), so GDB shows which core stopped.
 */
export class GdbCoreThreads {
  /** The thread that stopped last; GDB's current thread after a stop. */
  stopped = 1;
  /** Selected by `Hg`: whose registers `g`, `G`, `p`, `P` read and write. */
  registers = 1;
  /** Selected by `Hc`: which core a step without a thread id steps. */
  stepping = 1;

  constructor(private readonly describe: ReadonlyArray<() => string>) {}

  /** Records a stop of `thread`; GDB reads that thread's registers next. */
  stop(thread: number): void {
    this.stopped = this.registers = this.stepping = thread;
  }

  /** The reply to a thread packet, or undefined when `payload` is not one. */
  answer(payload: string): string | undefined {
    if (payload === 'qfThreadInfo') return `m${this.describe.map((_, i) => (i + 1).toString(16)).join(',')}`;
    if (payload === 'qsThreadInfo') return 'l';
    if (payload === 'qC') return `QC${this.stopped.toString(16)}`;
    const select = /^H([gc])(-?[0-9a-fA-F]+)$/.exec(payload);
    if (select) {
      const id = parseInt(select[2]!, 16);
      if (id !== 0 && id !== -1 && !this.exists(id)) return 'E01';
      const thread = id <= 0 ? this.stopped : id;
      if (select[1] === 'g') this.registers = thread;
      else this.stepping = thread;
      return 'OK';
    }
    // An action for a thread that does not exist is refused whole, before the stub acts on it
    // (a step of thread 5 would otherwise step core 0 and make `qC` name thread 5).
    if (payload.startsWith('vCont;')) {
      const ids = payload.slice('vCont;'.length).split(';').flatMap((action) => (action.includes(':') ? [action.slice(action.indexOf(':') + 1)] : []));
      // -1 is every thread, 0 any one: the stub steps the selected thread for both.
      return ids.every((id) => id === '-1' || id === '0' || (/^[0-9a-fA-F]+$/.test(id) && this.exists(parseInt(id, 16)))) ? undefined : 'E01';
    }
    const alive = /^T([0-9a-fA-F]+)$/.exec(payload);
    if (alive) return this.exists(parseInt(alive[1]!, 16)) ? 'OK' : 'E01';
    const extra = /^qThreadExtraInfo,([0-9a-fA-F]+)$/.exec(payload);
    if (extra) {
      const id = parseInt(extra[1]!, 16);
      return this.exists(id) ? hexOfText(this.describe[id - 1]!()) : 'E01';
    }
    return undefined;
  }

  /** `S05`-style stop replies become `T05thread:N;`; a `T` reply without a thread gets the one that stopped. */
  namedStopReply(payload: string): string {
    const thread = `thread:${this.stopped.toString(16)};`;
    if (/^S[0-9a-fA-F]{2}$/.test(payload)) return `T${payload.slice(1)}${thread}`;
    if (/^T[0-9a-fA-F]{2}/.test(payload) && !payload.includes('thread:')) return `${payload}${payload.length > 3 && !payload.endsWith(';') ? ';' : ''}${thread}`;
    return payload;
  }

  private exists(id: number): boolean {
    return id >= 1 && id <= this.describe.length;
  }
}
