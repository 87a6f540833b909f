import { type Clock, sleep } from '../../core/clock.js';
import { socketConnection } from '../../core/gdb/debugger-connection.js';
import { DebugLegRefused, type WorkerLink } from '../worker/worker-link.js';
import type { GdbBridge } from './gdb-bridge.js';

type DebugLink = Required<Pick<WorkerLink, 'debugDial'>>;

/** The most host ms between two dials after the server could not be reached (the wait doubles up to it). */
export const MAX_DEBUG_DIAL_RETRY_MS = 30_000;

export interface RelayedDebuggersOptions {
  link: DebugLink;
  jobId: string;
  clock: Clock;
  /** Aborted when the job ends: the pump stops and the relayed connection closes. */
  signal: AbortSignal;
  /** Host ms before dialling again after the server could not be reached (doubles up to `MAX_DEBUG_DIAL_RETRY_MS`). */
  retryMs: number;
  logError: (message: string, cause?: unknown) => void;
}

/**
 * Brings the debuggers a bench server relays for a debug job (decision 0910) to the job's bridge:
 * the worker dials a leg, the server holds it until a debugger comes, and the leg, then that
 * debugger's raw stream, becomes one `DebuggerConnection`, so the bridge's rules (RSP checked
 * before the target, one debugger at a time, the idle timeout) hold for it as for a local TCP
 * debugger. The worker only ever dials out: one leg at a time, the next dialled once the last
 * closes (or the server asked for a new one); it stops when the server says the job is not its
 * debug job there, or the job ends here. Never rejects.
 */
export async function pumpRelayedDebuggers(bridge: GdbBridge, options: RelayedDebuggersOptions): Promise<void> {
  const { link, jobId, signal } = options;
  let retryMs = options.retryMs;
  while (!signal.aborted) {
    let leg;
    try {
      leg = await link.debugDial(jobId, signal);
      retryMs = options.retryMs;
    } catch (err) {
      if (signal.aborted || err instanceof DebugLegRefused) break;
      options.logError(`dialling a debug leg of job ${jobId} failed; trying again in ${retryMs} ms`, err);
      await sleep(options.clock, retryMs, signal).catch(() => undefined);
      retryMs = Math.min(retryMs * 2, MAX_DEBUG_DIAL_RETRY_MS);
      continue;
    }
    if (!leg) continue;
    const connection = socketConnection(leg);
    const closed = new Promise<void>((resolve) => connection.onClose(resolve));
    // The job ended here: the leg closes with the bridge, and at the latest here.
    const onAbort = () => connection.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    bridge.accept(connection);
    if (signal.aborted) onAbort();
    await closed;
    signal.removeEventListener('abort', onAbort);
  }
}
