import { AnswerCount } from './answer-count.js';
import { ExitReplyScan } from './exit-reply-scan.js';
import { DEFAULT_MAX_PACKET_BYTES, RspReader } from './rsp-reader.js';

/** How a debugger's connection will end the debugging once it closes: it detached or killed the target, or the firmware exited under it. */
export type DebuggerEnding =
  | { reason: 'detached' | 'killed'; message: string }
  | { reason: 'exited'; message: string; exitCode: number | undefined };

/** The words a refused second debugger gets (in an `E.` reply) and the log line says. */
export function secondDebuggerMessage(boardId: string): string {
  return `board ${boardId} already has a debugger attached (one at a time)`;
}

/**
 * The rules of one debugger's connection, wherever it is served (harness/debug/gdb-bridge.ts on
 * the host, backends/sim/sim-thread-gdb-port.ts in an engine's thread): only whole, well-framed
 * units of the debugger's bytes reach the target (`RspReader`: a malformed or oversized packet
 * throws `RspProtocolError`, so not a byte of it gets past); a detach (`D`) or kill (`k`, `vKill`)
 * from the debugger, or an exit reply (`W`, `X`) from the target, is noted as the `ending`. It
 * counts both ways for the slot's bound on unanswered packets: the packets with a valid checksum
 * it lets through (a wrong one goes on too, but a stub answers it with a `-` at most, and with
 * nothing in no-ack mode: RSP's rule, kept by QEMU, rp2040js and both sim stubs), and the
 * target's answers (`AnswerCount`: console output answers nothing).
 */
export class DebuggerGate {
  /** Set once the connection's close should end the debugging. */
  ending: DebuggerEnding | undefined;
  private readonly reader: RspReader;
  private readonly exitScan = new ExitReplyScan();
  private readonly answers = new AnswerCount();

  constructor(options: { maxPacketBytes?: number } = {}) {
    this.reader = new RspReader({ maxPacketBytes: options.maxPacketBytes ?? DEFAULT_MAX_PACKET_BYTES });
  }

  /**
   * What of the debugger's `data` may go on to the target now (`bytes`, '' when nothing): the bytes
   * themselves, untouched (the part of what the reader held and `data` that it consumed); a packet
   * still arriving stays here. `packets`: how many of them are packets with a valid checksum, the
   * ones a target answers. Throws `RspProtocolError` on broken framing.
   */
  fromDebugger(data: string): { bytes: string; packets: number } {
    const heldBefore = this.reader.held;
    let packets = 0;
    for (const event of this.reader.feed(data)) {
      if (event.kind !== 'packet' || !event.checksumOk) continue;
      packets++;
      const { payload } = event;
      if (payload[0] === 'D') this.ending = { reason: 'detached', message: 'the debugger detached; the firmware runs on' };
      else if (payload === 'k' || payload.startsWith('vKill')) this.ending = { reason: 'killed', message: 'the debugger killed the target' };
    }
    const heldAfter = this.reader.held.length;
    if (heldBefore.length === 0 && heldAfter === 0) return { bytes: data, packets };
    if (heldBefore.length + data.length > heldAfter) return { bytes: (heldBefore + data).slice(0, heldBefore.length + data.length - heldAfter), packets };
    return { bytes: '', packets };
  }

  /** How many packets the target's `text` answers; notes an exit reply in it (the text goes on as it came). */
  fromTarget(text: string): number {
    const answers = this.answers.feed(text);
    if (!this.ending) this.noteExit(text);
    return answers;
  }

  private noteExit(text: string): void {
    const exit = this.exitScan.feed(text);
    if (!exit) return;
    this.ending =
      exit.kind === 'W'
        ? { reason: 'exited', message: `the firmware exited with status ${exit.status} under the debugger`, exitCode: exit.status }
        : { reason: 'exited', message: `the target was terminated by signal ${exit.status} under the debugger`, exitCode: undefined };
  }
}
