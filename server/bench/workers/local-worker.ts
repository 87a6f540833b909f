import type { Board, BackendName } from '../../../boards/board-schema.js';
import type { Backend } from '../../../backends/backend.js';
import { type Clock, type TimerHandle } from '../../../core/clock.js';
import type { LocalDispatcherOptions } from '../../../harness/dispatcher.js';
import type { BackendChoice } from '../../../harness/board-resolution.js';
import { BenchWorker } from '../../../harness/worker/bench-worker.js';
import { type WorkerBoardState, WorkerBoards } from '../../../harness/worker/worker-boards.js';
import type { WorkerLink } from '../../../harness/worker/worker-link.js';
import type { PoolSizes } from '../../../harness/worker/pool-size.js';
import type { Logger } from '../../http/logger.js';
import { boardHealthControlOf } from '../../../backends/backend.js';
import { linkOutlastingOutages } from './link-outlasting-outages.js';
import type { WorkerGateway } from './worker-gateway.js';


/**
 * Host ms a claim of the worker in this process waits before it ends empty and the worker asks
 * again, as a remote worker's long-polled claim does (`wait_seconds`). Unbounded, a claim waiting
 * on boards nobody queues for held its place for ever: with the most claims in flight, a board
 * freed meanwhile (covered by none of them) waited with its next job queued until one answered.
 */
const LOCAL_CLAIM_WAIT_MS = 20_000;
/** The id the worker inside the server's own process claims jobs under (kept across restarts). */
export const LOCAL_WORKER_ID = 'local';

export interface LocalWorkerOptions {
  /** Deadlines and abort grace of the jobs. */
  dispatcher?: Omit<LocalDispatcherOptions, 'clock'>;
  /** Host ms between two claim renewals of a running job (they also save its UART). Default 2 000. */
  heartbeatMs?: number;
  /** The worker's id in the store; default `LOCAL_WORKER_ID` (one server on its own SQLite). */
  workerId?: string;
  /** Host ms its claims last unless renewed; null (default): until the server's next start. */
  claimMs?: number | null;
  /** Instances of each emulated board this worker runs at once (decision 0510); default 1. */
  poolSizes?: PoolSizes;
  /** Wraps the in-process link (metrics, tests that hold a message back); default: as it is. */
  decorateLink?: (link: WorkerLink) => WorkerLink;
}

/** What the service gives the worker in its process: the backends it runs, and where it reports its boards. */
export interface LocalWorkerWiring {
  boards: readonly Board[];
  backends: Partial<Record<BackendName, Backend>>;
  choice: BackendChoice;
  /**
   * Records the boards as a worker's announce (`first`) or heartbeat does, through the worker
   * protocol into the store: where the server reads their availability, as for remote workers.
   */
  report: (states: readonly WorkerBoardState[], options: { first: boolean }) => Promise<void>;
  /** Host ms between two reports: the heartbeat the server asks of every worker. */
  reportEveryMs: number;
}

export type LocalWorkerSetup = LocalWorkerOptions & LocalWorkerWiring;

/**
 * The embedded default's worker: the same `BenchWorker` and `WorkerBoards` a single-board
 * computer runs, in the server's process, on the server's backends, through the gateway's
 * in-process link (claims that never lapse; the next start releases them). Like a remote worker it
 * reports its boards (availability, health keeping) at start and every heartbeat, and the server
 * reads them from the store: the server itself never asks a backend (decision 0460). A backend
 * keeping board health may have quarantined a board in a job: the boards are reported again after
 * such a job, so listings show it when the job's outcome does.
 */
export class LocalWorker {
  private readonly worker: BenchWorker;
  private readonly boards: WorkerBoards;
  private timer: TimerHandle | undefined;
  private closed = false;
  /** Reports run one after another, so an older one never overwrites a newer one. */
  private reporting: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { clock: Clock; gateway: WorkerGateway; logger: Logger },
    private readonly setup: LocalWorkerSetup,
  ) {
    this.boards = new WorkerBoards(setup.boards, setup.backends, setup.choice, setup.poolSizes);
    this.worker = new BenchWorker({
      clock: deps.clock,
      link: (setup.decorateLink ?? ((link) => link))(
        linkOutlastingOutages(deps.gateway.linkFor(setup.workerId ?? LOCAL_WORKER_ID, { claimMs: setup.claimMs ?? null, claimWaitMs: LOCAL_CLAIM_WAIT_MS }), {
          clock: deps.clock,
          logError: (message, cause) => deps.logger.warn(`${message}: ${cause instanceof Error ? cause.message : String(cause)}`),
        }),
      ),
      boards: this.boards.ids,
      // In this process no server limit holds the worker to a few claims: one per board, so a board
      // that frees is claimed for at once, whatever the claims on other boards wait for (decision 0640).
      maxClaimsInFlight: Math.max(1, this.boards.ids.length),
      poolSize: (boardId) => this.boards.poolSize(boardId),
      boardFor: (boardId) => this.boards.target(boardId),
      afterJob: async (_boardId, backend) => {
        if (backend && boardHealthControlOf(backend)) await this.report({ first: false });
      },
      dispatcher: setup.dispatcher,
      heartbeatMs: setup.heartbeatMs,
      logError: (message, cause) => deps.logger.error(message, cause),
    });
  }

  /** Announces its boards (settles once the store has them), then heartbeats and claims jobs. */
  async start(): Promise<void> {
    await this.report({ first: true });
    this.arm();
    this.worker.start();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    await this.worker.close();
    await this.reporting;
  }

  /** The host ms a job of `uartSeconds` on `boardId` may take, by the backend running the board (its `Retry-After`). */
  deadlineMs(uartSeconds: number, boardId: string): number {
    const board = this.setup.boards.find((b) => b.id === boardId);
    return this.worker.deadlineMs(uartSeconds, board && this.boards.lastKnownBackend(boardId)?.jobBudgetMs?.(board));
  }

  started(jobId: string): Promise<void> {
    return this.worker.started(jobId);
  }

  idle(): Promise<void> {
    return this.worker.idle();
  }

  /** Reports every board now, after any report still running. Never rejects. */
  private report(options: { first: boolean }): Promise<void> {
    const next = this.reporting.then(async () => {
      try {
        await this.setup.report(await this.boards.states(), options);
      } catch (err) {
        this.deps.logger.error('the worker in this server could not report its boards', err);
      }
    });
    this.reporting = next;
    return next;
  }

  private arm(): void {
    if (this.closed) return;
    this.timer = this.deps.clock.setTimeout(() => {
      void this.report({ first: false }).finally(() => this.arm());
    }, this.setup.reportEveryMs);
  }
}
