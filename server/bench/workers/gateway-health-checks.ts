import type { HealthCheckReport } from '../../../harness/worker/worker-link.js';
import type { HealthCheckOutcomeRecord, HealthCheckRecord } from '../../storage/bench/health-check-store.js';
import type { StoreSignals } from '../domain/store-signals.js';
import type { WorkerGatewayDeps } from './worker-gateway-deps.js';

/**
 * The worker gateway's side of board health checks: a check requested of the worker serving a
 * board wakes that worker's claim, its outcome is recorded for the worker that ran it, and whoever
 * waits for it hears at once (or from the store, on another replica, at the signals' poll).
 */
export class GatewayHealthChecks {
  constructor(
    private readonly deps: Pick<WorkerGatewayDeps, 'store' | 'clock'>,
    private readonly signals: StoreSignals,
    private readonly wakeClaimsOf: (board: string) => void,
  ) {}

  /** Records the outcome of a health check `workerId` ran; undefined when it does not run that check (late, or not its). */
  async done(workerId: string, checkId: string, report: HealthCheckReport): Promise<HealthCheckRecord | undefined> {
    const outcome: HealthCheckOutcomeRecord = report.passed
      ? { passed: true, uartText: report.uartText, elapsedNanos: report.elapsedNanos }
      : { passed: false, reason: report.reason, uartText: report.uartText, ...('refused' in report && report.refused ? { refused: true } : {}) };
    const finished = await this.deps.store.healthChecks.finish(checkId, workerId, outcome, this.deps.clock.nowMs());
    this.signals.notify(`check:${checkId}`);
    return finished;
  }

  /** A health check ended without its worker's outcome (the worker was revoked): whoever waits for it hears now. */
  ended(checkId: string): void {
    this.signals.notify(`check:${checkId}`);
  }

  /** A health check was requested of the worker serving `board`: a claim waiting for that board takes it now. */
  requested(board: string): void {
    this.wakeClaimsOf(board);
  }

  /** The health check once it is done (its outcome); undefined when `signal` aborts first. */
  outcome(checkId: string, signal: AbortSignal): Promise<HealthCheckRecord | undefined> {
    return this.signals.until(`check:${checkId}`, signal, async () => {
      const check = await this.deps.store.healthChecks.get(checkId);
      return check?.state === 'done' ? check : undefined;
    });
  }
}
