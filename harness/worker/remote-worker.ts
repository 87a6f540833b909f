import type { Board, BackendName } from '../../boards/board-schema.js';
import type { z } from 'zod';
import { announceAnswerSchema, okAnswerSchema } from '../../wire/worker/worker-schemas.js';
import type { Backend } from '../../backends/backend.js';
import type { QuarantineStore } from '../../backends/probe/quarantine-store.js';
import { type Clock, sleep, type TimerHandle } from '../../core/clock.js';
import type { LocalDispatcherOptions } from '../dispatcher.js';
import type { BackendChoice } from '../board-resolution.js';
import { BenchWorker } from './bench-worker.js';
import { HttpWorkerLink, WorkerServerError } from './http-worker-link.js';
import { LinkedQuarantineStore } from './linked-quarantine-store.js';
import { WorkerBoards } from './worker-boards.js';
import type { PoolSizes } from './pool-size.js';

export interface RemoteWorkerOptions {
  serverUrl: string;
  token: string;
  clock: Clock;
  /** The boards attached to this host (from its bench file, or the catalog for an emulator farm). */
  boards: readonly Board[];
  /**
   * The backends that run the boards; as a function, given the board-health store kept by the
   * server (decision 0421), e.g. `({ quarantineStore }) => createBackends({ ..., quarantineStore })`.
   */
  backends: Partial<Record<BackendName, Backend>> | ((context: { quarantineStore: QuarantineStore }) => Partial<Record<BackendName, Backend>>);
  choice: BackendChoice;
  /** Instances of each emulated board run here at once (decision 0510); default 1 (the CLI gives the host's cores). */
  poolSizes?: PoolSizes;
  firmwareCacheDir: string;
  dispatcher?: Omit<LocalDispatcherOptions, 'clock'>;
  /** Host ms between two announcement attempts while the server cannot be reached. Default 2 000 (doubling to 30 000). */
  retryMs?: number;
  logInfo: (message: string) => void;
  logError: (message: string, cause?: unknown) => void;
}

type AnnounceAnswer = z.infer<typeof announceAnswerSchema>;

/**
 * `hilbench worker`: a bench worker next to the hardware. It dials the server (outbound only),
 * announces the boards it can run and their availability, heartbeats with fresh availability, and
 * runs the jobs it claims through the same `BenchWorker` as the server's own. It announces once,
 * at start (the server then fails as interrupted whatever it held before); a server that was down
 * meanwhile keeps its running jobs' claims for their outcomes (decision 0461).
 */
export class RemoteWorker {
  private readonly link: HttpWorkerLink;
  private readonly backends: Partial<Record<BackendName, Backend>>;
  private readonly boards: WorkerBoards;
  private readonly quarantineStore: LinkedQuarantineStore;
  private worker: BenchWorker | undefined;
  private heartbeatTimer: TimerHandle | undefined;
  private closed = false;
  private readonly running = new Set<string>();

  constructor(private readonly options: RemoteWorkerOptions) {
    this.link = new HttpWorkerLink({
      serverUrl: options.serverUrl,
      token: options.token,
      clock: options.clock,
      firmwareCacheDir: options.firmwareCacheDir,
      logError: options.logError,
    });
    this.quarantineStore = new LinkedQuarantineStore({ link: this.link, clock: options.clock, logError: options.logError });
    this.backends = typeof options.backends === 'function' ? options.backends({ quarantineStore: this.quarantineStore }) : options.backends;
    this.boards = new WorkerBoards(options.boards, this.backends, options.choice, options.poolSizes);
  }

  /** Announces (retrying while the server cannot be reached; a refused token is thrown) and starts claiming. */
  async start(): Promise<AnnounceAnswer> {
    const answer = await this.announceUntilHeard();
    const link = this.link;
    const running = this.running;
    this.worker = new BenchWorker({
      clock: this.options.clock,
      link: {
        ...bindLink(link),
        running: (jobId) => {
          running.add(jobId);
          return link.running(jobId);
        },
        finish: async (jobId, outcome) => {
          try {
            await link.finish(jobId, outcome);
          } finally {
            running.delete(jobId);
          }
        },
      },
      boards: this.options.boards.map((b) => b.id),
      poolSize: (boardId) => this.boards.poolSize(boardId),
      boardFor: (id) => this.boards.target(id),
      dispatcher: this.options.dispatcher,
      heartbeatMs: (answer.claim_seconds * 1000) / 3,
      logError: this.options.logError,
    });
    this.worker.start();
    this.armHeartbeat(answer.heartbeat_seconds * 1000);
    return answer;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.heartbeatTimer !== undefined) this.options.clock.clearTimeout(this.heartbeatTimer);
    await this.worker?.close();
    this.quarantineStore.close();
    // Backends built here (from the factory) are ours to stop (scheduled automatic health checks).
    if (typeof this.options.backends === 'function') for (const backend of Object.values(this.backends)) await backend?.close?.();
  }

  /** The boards as this host can run them now, and whether their backends keep board health and can check it (the wire's names). */
  private async reports() {
    return (await this.boards.states()).map((s) => ({
      board: s.board,
      backend: s.backend,
      available: s.available,
      reason: s.reason,
      keeps_health: s.keepsHealth,
      pool_size: s.poolSize,
      health_check: s.healthCheck,
      quarantined: s.quarantined,
    }));
  }

  private async announceUntilHeard(): Promise<AnnounceAnswer> {
    for (let pauseMs = this.options.retryMs ?? 2_000; ; pauseMs = Math.min(pauseMs * 2, 30_000)) {
      try {
        const answer = await this.link.request('POST', '/api/v1/worker/announce', announceAnswerSchema, { boards: await this.reports(), running_jobs: [...this.running] });
        this.options.logInfo(`announced to ${this.options.serverUrl} as worker ${answer.label} (${answer.worker_id})`);
        return answer;
      } catch (err) {
        if (err instanceof WorkerServerError && err.status < 500) throw err;
        if (this.closed) throw err;
        this.options.logError(`announcing to ${this.options.serverUrl} failed; trying again in ${pauseMs} ms`, err);
        await sleep(this.options.clock, pauseMs);
      }
    }
  }

  private armHeartbeat(everyMs: number): void {
    if (this.closed) return;
    this.heartbeatTimer = this.options.clock.setTimeout(() => {
      void this.beat().finally(() => this.armHeartbeat(everyMs));
    }, everyMs);
  }

  private async beat(): Promise<void> {
    try {
      await this.link.request('POST', '/api/v1/worker/heartbeat', okAnswerSchema, { boards: await this.reports() });
    } catch (err) {
      this.options.logError('the heartbeat did not reach the server', err);
    }
  }
}

/** The link's methods as plain functions (so they can be spread and overridden). */
function bindLink(link: HttpWorkerLink) {
  return {
    claim: link.claim.bind(link),
    firmware: link.firmware.bind(link),
    running: link.running.bind(link),
    uart: link.uart.bind(link),
    heartbeat: link.heartbeat.bind(link),
    finish: link.finish.bind(link),
    input: link.input.bind(link),
    healthCheckDone: link.healthCheckDone.bind(link),
    debugDial: link.debugDial.bind(link),
    debugLegAddress: link.debugLegAddress.bind(link),
  };
}
