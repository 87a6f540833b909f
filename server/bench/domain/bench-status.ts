import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import type { BenchSnapshot } from '../views/bench-snapshot.js';
import type { AdminBody, BoardBody, BoardHealthBody, HealthBody, StatsBody } from '../../../wire/bench/bench-schemas.js';
import { BENCH_API_VERSION } from './bench-version.js';
import type { BoardAccess } from './board-access.js';
import { adminBoard, adminJob, adminSession, type BoardState, boardBody, snapshotBoard, statsBody } from '../views/board-views.js';
import type { LiveBoards } from './live-boards.js';

type AdminWaiter = AdminBody['boards'][number]['waiting'][number];

/**
 * The read side: service health, the board list, the snapshot (pages and stats) and the admin
 * view, each a projection of `BoardAccess.boardStates()` and the store's counts.
 */
export class BenchStatus {
  private readonly startedAtMs: number;

  constructor(
    private readonly deps: {
      clock: Clock;
      store: BenchStore;
      boards: LiveBoards;
      logger: Logger;
      access: BoardAccess;
      waitlistCount: () => Promise<number>;
      boardHealth: (boardId: string) => Promise<BoardHealthBody | null>;
      storageFull?: () => Promise<boolean>;
    },
  ) {
    this.startedAtMs = deps.clock.nowMs();
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  async listBoards(): Promise<BoardBody[]> {
    return (await this.deps.access.boardStates()).map(boardBody);
  }

  async health(): Promise<HealthBody> {
    let database: 'ok' | 'error' = 'ok';
    try {
      await this.deps.store.ping();
    } catch (err) {
      database = 'error';
      this.deps.logger.error('health check: the database did not answer', err);
    }
    const storage = (await this.deps.storageFull?.()) ? 'full' : 'ok';
    const boards = await this.deps.boards.all();
    const online = boards.filter((b) => b.backend).length;
    const offline = boards.length - online;
    return {
      status: database === 'ok' && storage === 'ok' && (online > 0 || boards.length === 0) ? 'ok' : 'degraded',
      version: BENCH_API_VERSION,
      uptime_seconds: (this.now() - this.startedAtMs) / 1000,
      boards: { online, offline },
      database,
      storage,
    };
  }

  /** The read-only view model of the pages and `GET /api/v1/stats`. */
  async getSnapshot(): Promise<BenchSnapshot> {
    const states = await this.deps.access.boardStates();
    const counts = await this.deps.store.counts(this.now());
    const recent = await this.deps.store.recentJobs(20);
    return {
      generatedAt: isoFromMs(this.now()),
      version: BENCH_API_VERSION,
      boards: states.map(snapshotBoard),
      recentActivity: recent.map((j) => ({
        // A short prefix: enough to tell jobs apart on a public page, useless for fetching one.
        jobId: j.jobId.slice(0, 12),
        board: j.board,
        agentLabel: j.agentLabel,
        state: j.state,
        at: isoFromMs(j.finishedAtMs ?? j.startedAtMs ?? j.createdAtMs),
      })),
      totals: {
        agents: counts.agents,
        sessionsOpen: counts.sessionsOpen,
        jobsTotal: counts.jobsTotal,
        jobsByState: counts.jobsByState,
        waitlist: await this.deps.waitlistCount(),
      },
    };
  }

  async stats(): Promise<StatsBody> {
    return statsBody(await this.getSnapshot());
  }

  /**
   * Who waits for `state`'s board (decisions 0555, 0605): the store's queue of its pool, then of
   * each instance asked for by id, each first first, on every replica. `labels` caches agents' labels.
   */
  private async waiting(state: BoardState, labels: Map<string, Promise<string>>): Promise<AdminWaiter[]> {
    const nowMs = this.now();
    const id = state.resolved.board.id;
    const queues = [id, ...(state.pool?.instances.map((i) => i.instance).filter((i) => i !== id) ?? [])];
    const lines = await Promise.all(queues.map((queue) => this.deps.store.sessionQueue.waiters(queue, nowMs)));
    const labelOf = (agentId: string) => {
      const known = labels.get(agentId) ?? this.deps.store.getAgent(agentId).then((a) => a?.label ?? agentId);
      labels.set(agentId, known);
      return known;
    };
    return Promise.all(
      lines.flatMap((line) =>
        line.map(async (w, i) => ({ agent_id: w.agentId, agent_label: await labelOf(w.agentId), queue: w.queue, position: i + 1, since: isoFromMs(w.enqueuedAtMs) })),
      ),
    );
  }

  async admin(): Promise<AdminBody> {
    const states = await this.deps.access.boardStates();
    const sessions = await this.deps.store.listActiveSessions(this.now());
    const counts = await this.deps.store.counts(this.now());
    const health = await Promise.all(states.map(({ resolved }) => this.deps.boardHealth(resolved.board.id)));
    const labels = new Map<string, Promise<string>>();
    const waiting = await Promise.all(states.map((state) => this.waiting(state, labels)));
    return {
      generated_at: isoFromMs(this.now()),
      boards: states.map((state, i) => adminBoard(state, health[i] ?? null, waiting[i] ?? [])),
      sessions: sessions.map(adminSession),
      recent_jobs: (await this.deps.store.recentJobs(50)).map(adminJob),
      recent_failures: (await this.deps.store.recentFailures(20)).map(adminJob),
      counts: {
        agents: counts.agents,
        sessions_open: counts.sessionsOpen,
        jobs_total: counts.jobsTotal,
        jobs_by_state: counts.jobsByState,
        waitlist: await this.deps.waitlistCount(),
      },
    };
  }
}
