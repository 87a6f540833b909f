import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Clock, TimerHandle } from '../../../core/clock.js';
import { DEBUGGER_KEEPALIVE_IDLE_MS } from '../../../core/gdb/debugger-connection.js';
import { rspPacket } from '../../../core/gdb/rsp-packet.js';

/** How long a leg whose other side closed may take to send what was written to it (host ms) before it is cut. */
export const SPLICE_LINGER_MS = 5_000;

export interface DebugSplice {
  /** The server ends the stream (the job ended, shutdown): the debugger reads `reason` as an `E.` reply, its last bytes. */
  end(reason: string): void;
  /** Resolves once both legs have closed. */
  readonly closed: Promise<void>;
}

/**
 * Splices a debugger's upgraded connection and its worker's leg (decision 0910): bytes flow both
 * ways untouched, by `pipe`, so what waits in the server is bounded by the streams' own buffers (a
 * side that stops reading stops the other's writes, down to its TCP window). Either side's end or
 * close ends the other once what was written to it went out, or cuts it `SPLICE_LINGER_MS` later
 * (so a half-closed stream whose other side stays open still closes, and frees its place). Both
 * legs that are sockets get no Nagle delay (each packet waits for its answer) and TCP keepalive (a
 * peer that vanished without closing ends the splice). Nothing here reads the bytes.
 */
export function spliceDebugStream(debuggerLeg: Duplex, workerLeg: Duplex, options: { clock: Clock }): DebugSplice {
  const { clock } = options;
  for (const leg of [debuggerLeg, workerLeg]) {
    (leg as Partial<Socket>).setNoDelay?.(true);
    (leg as Partial<Socket>).setKeepAlive?.(true, DEBUGGER_KEEPALIVE_IDLE_MS);
    leg.on('error', () => undefined);
  }
  const lingers: TimerHandle[] = [];
  /** Ends `leg` (after what was written), and cuts it if that does not happen within the linger. */
  const endSoon = (leg: Duplex) => {
    if (leg.destroyed) return;
    leg.end();
    lingers.push(clock.setTimeout(() => leg.destroy(), SPLICE_LINGER_MS));
  };
  const legClosed = (leg: Duplex) => new Promise<void>((resolve) => (leg.destroyed && leg.closed ? resolve() : leg.once('close', () => resolve())));
  const closed = Promise.all([legClosed(debuggerLeg), legClosed(workerLeg)]).then(() => {
    for (const timer of lingers) clock.clearTimeout(timer);
  });
  debuggerLeg.pipe(workerLeg);
  workerLeg.pipe(debuggerLeg);
  // `pipe` ends the other side on an end; a close without one (a reset, an error) must too. On an
  // end the linger is armed as well: a half-closed leg (a debugger that sent FIN) on a server that
  // allows half-open connections never closes while its other side stays open, and would hold the
  // job's one debugger place for ever (the place is freed once both legs closed).
  for (const [leg, other] of [[debuggerLeg, workerLeg], [workerLeg, debuggerLeg]] as const) {
    leg.once('end', () => endSoon(other));
    leg.once('close', () => endSoon(other));
  }
  return {
    end: (reason) => {
      workerLeg.unpipe(debuggerLeg);
      debuggerLeg.unpipe(workerLeg);
      workerLeg.destroy();
      if (!debuggerLeg.destroyed && debuggerLeg.writable) debuggerLeg.write(`+${rspPacket(`E.${reason}`)}`, 'latin1');
      endSoon(debuggerLeg);
    },
    closed,
  };
}
