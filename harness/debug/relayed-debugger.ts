import { serveDebugLegs } from '../../clients/bench/debug-leg.js';
import type { Clock } from '../../core/clock.js';
import { socketConnection } from '../../core/gdb/debugger-connection.js';
import type { WorkerLink } from '../worker/worker-link.js';
import type { GdbBridge } from './gdb-bridge.js';

type DebugLink = Required<Pick<WorkerLink, 'debugDial'>>;

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
 * each leg the worker dials that becomes a debugger's raw stream is one `DebuggerConnection`, so
 * the bridge's rules (RSP checked before the target, one debugger at a time, the idle timeout)
 * hold for it as for a local TCP debugger (`serveDebugLegs` dials them, one at a time). Never rejects.
 */
export function pumpRelayedDebuggers(bridge: GdbBridge, options: RelayedDebuggersOptions): Promise<void> {
  const { link, jobId } = options;
  return serveDebugLegs((leg) => bridge.accept(socketConnection(leg)), {
    dial: (signal) => link.debugDial(jobId, signal),
    clock: options.clock,
    signal: options.signal,
    retryMs: options.retryMs,
    logError: (message, cause) => options.logError(`job ${jobId}: ${message}`, cause),
  });
}
