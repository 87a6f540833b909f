import { renewClaim } from './claim-renewal.js';
import { BackendError, type FirmwareImage, type UartChunk } from '../../backends/backend.js';
import type { Clock } from '../../core/clock.js';
import { runDebugSession } from '../debug/debug-session.js';
import { pumpRelayedDebuggers } from '../debug/relayed-debugger.js';
import type { UartSoFar } from '../dispatcher.js';
import type { WorkerBoard } from './bench-worker.js';
import { UartReporter } from './uart-reporter.js';
import type { DebugTerms, JobTicket, WorkerJobOutcome, WorkerLink } from './worker-link.js';

export interface DebugJobOptions {
  clock: Clock;
  link: WorkerLink;
  /** The job's ordinary wall deadline (host ms) for its `uartSeconds`: the debugger's time is added, within `terms.maxDebugMs`. */
  ordinaryDeadlineMs: number;
  heartbeatMs: number;
  retryMs: number;
  /** Told once the device is being opened (the job has started here). */
  onStarted: () => void;
  /** Aborted when the worker closes: the job stops, unreported (the server fails it as interrupted). */
  closing: AbortSignal;
  logError: (message: string, cause?: unknown) => void;
}

/**
 * A debug job on this worker (issue 32, decisions 0560, 0910): the image is flashed with the core halted
 * at reset, the job reported running, and the debuggers the server relays are served by the same
 * bridge `hilbench debug` uses locally. The job's device-time window (`uartSeconds`) runs after
 * the debugger detaches; its wall deadline is the ordinary one stretched by at most
 * `terms.maxDebugMs`. The claim is renewed meanwhile, and a stop from the server (cancel, session
 * ended) ends it. Resolves with the outcome to report; never rejects.
 */
export async function runDebugJob(ticket: JobTicket & { debug: DebugTerms }, target: WorkerBoard, image: FirmwareImage, options: DebugJobOptions): Promise<WorkerJobOutcome> {
  const { link, clock } = options;
  const { debugDial } = link;
  if (!debugDial) return failed('unavailable', 'this worker cannot carry debug streams');
  const relay = link.debugLegAddress?.(ticket.jobId);
  const stopped = new AbortController();
  const stop = (reason: string) => stopped.abort(new BackendError('cancelled', reason));
  const onClosing = () => stop('the worker is shutting down');
  options.closing.addEventListener('abort', onClosing, { once: true });
  if (options.closing.aborted) onClosing();
  const deadlineMs = options.ordinaryDeadlineMs + ticket.debug.maxDebugMs;
  const deadline = clock.setTimeout(
    () => stopped.abort(new BackendError('timeout', `debug job ${ticket.jobId} stopped by its deadline: ${deadlineMs} ms (its ordinary deadline plus at most ${ticket.debug.maxDebugMs} ms under a debugger)`)),
    deadlineMs,
  );
  const unwatch = link.watch?.(ticket.jobId, (push) => stop(push.reason));
  const endRenewals = renewClaim(link, ticket.jobId, { clock, everyMs: options.heartbeatMs, onStop: stop, logError: options.logError, what: 'debug job' });

  const reporter = new UartReporter(ticket.jobId, link, options.logError);
  const chunks: UartChunk[] = [];
  let uartBytes = 0;
  let dropped = 0;
  let soFar: UartSoFar = { timeBase: 'wall', uart: chunks, uartBytes: 0, droppedUartBytes: 0 };
  const pumpEnded = new AbortController();
  let pump: Promise<void> = Promise.resolve();
  const startedAtMs = clock.nowMs();
  options.onStarted();
  try {
    const ended = await runDebugSession(target.backend, target.board, image, {
      clock,
      idleTimeoutMs: ticket.debug.idleTimeoutMs,
      afterDetachSeconds: ticket.uartSeconds,
      onOpen: (device) => {
        soFar = { ...soFar, timeBase: device.timeBase, ...(device.clockSource === undefined ? {} : { clockSource: device.clockSource }) };
      },
      onUart: (chunk) => {
        if (uartBytes + chunk.bytes.length > ticket.maxUartBytes) {
          dropped += chunk.bytes.length;
        } else {
          chunks.push(chunk);
          uartBytes += chunk.bytes.length;
        }
        soFar = { ...soFar, uart: chunks, uartBytes, droppedUartBytes: dropped };
        reporter.report(soFar);
      },
      log: () => undefined,
      ...(relay ? { relay } : {}),
      onBridge: (bridge) => {
        const relayed = () => pumpRelayedDebuggers(bridge, { link: { debugDial: debugDial.bind(link) }, jobId: ticket.jobId, clock, signal: pumpEnded.signal, retryMs: options.retryMs, logError: options.logError });
        // A sim engine's thread dials the legs itself while it serves (decision 0910); once the
        // debugging is over this thread dials them, so a late debugger is closed at once (the
        // bridge takes none) rather than left waiting for a leg until the job ends.
        if (bridge.relayedByDevice) pump = bridge.ended.then(() => (pumpEnded.signal.aborted ? undefined : relayed()));
        else pump = relayed();
      },
      onListening: () => {
        // Halted at reset, a debugger may attach: the job is running (its agent's client waits for this).
        link.running(ticket.jobId).then(
          (control) => control.stop !== null && stop(control.stop),
          (err: unknown) => options.logError(`reporting debug job ${ticket.jobId} running failed`, err),
        );
      },
      signal: stopped.signal,
    });
    const capture = { timeBase: soFar.timeBase, ...(soFar.clockSource === undefined ? {} : { clockSource: soFar.clockSource }), uart: [...chunks], droppedUartBytes: dropped };
    if (ended.outcome === 'interrupted') {
      const reason = stopped.signal.reason instanceof BackendError ? stopped.signal.reason : new BackendError('cancelled', 'the debug job was stopped');
      return { state: 'failed', failure: { kind: reason.kind, message: reason.message }, uart: capture };
    }
    if (ended.outcome === 'timeout') return { state: 'failed', failure: { kind: 'timeout', message: ended.reason }, uart: capture };
    if (ended.outcome === 'failed' && !ended.stop) {
      const kind = ended.kind ?? 'internal';
      // The session words a backend's failure `kind: message`; the job's failure keeps them apart.
      const message = ended.reason.startsWith(`${kind}: `) ? ended.reason.slice(kind.length + 2) : ended.reason;
      return { state: 'failed', failure: { kind, message }, uart: capture };
    }
    // Passed, or the firmware crashed or exited non-zero: the job is done and its stop says how.
    const runStop = ended.stop ?? { reason: 'until' as const, elapsedNanos: 0 };
    return { state: 'done', uart: capture, stop: runStop, flashMs: 0, runMs: clock.nowMs() - startedAtMs };
  } finally {
    clock.clearTimeout(deadline);
    options.closing.removeEventListener('abort', onClosing);
    endRenewals();
    unwatch?.();
    pumpEnded.abort();
    await pump;
    await reporter.flushed();
  }
}

function failed(kind: BackendError['kind'], message: string): WorkerJobOutcome {
  return { state: 'failed', failure: { kind, message }, uart: null };
}
