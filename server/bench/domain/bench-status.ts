import type { Clock } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore, JobWithAgent, SessionWithAgent, StoreCounts } from '../../storage/bench/bench-store.js';
import type { BoardAccess } from './board-access.js';
import type { BoardState } from './board-state.js';
import type { KeptBoardHealth } from './kept-board-health.js';
import type { LiveBoards } from './live-boards.js';

/** The service's health: what answers, and how many boards can run. */
export interface ServiceHealth {
  status: 'ok' | 'degraded';
  uptimeSeconds: number;
  boards: { online: number; offline: number };
  database: 'ok' | 'error';
  storage: 'ok' | 'full';
}

/** The public overview of the bench (the pages and `GET /api/v1/stats` show it as a snapshot). */
export interface BenchOverview {
  /** When it was taken, host ms. */
  nowMs: number;
  states: BoardState[];
  counts: StoreCounts;
  /** The 20 most recent jobs, newest first. */
  recentJobs: JobWithAgent[];
  waitlist: number;
}

/** A session request waiting for a board (decisions 0555, 0605). */
export interface BoardWaiter {
  agentId: string;
  agentLabel: string;
  /** The board (any free instance of its pool) or one instance asked for by id. */
  queue: string;
  /** 1-based place in that queue. */
  position: number;
  sinceMs: number;
}

/** What an administrator sees: every board with its health and its waiters, open sessions, recent jobs and failures, counts. */
export interface AdminOverview {
  /** When it was taken, host ms. */
  nowMs: number;
  boards: Array<{ state: BoardState; health: KeptBoardHealth | null; waiting: BoardWaiter[] }>;
  sessions: SessionWithAgent[];
  /** The 50 most recent jobs and the 20 most recent failures, newest first. */
  recentJobs: JobWithAgent[];
  recentFailures: JobWithAgent[];
  counts: StoreCounts;
  waitlist: number;
}

/**
 * The read side: service health, the board list, the overview (pages and stats) and the admin
 * overview, each from `BoardAccess.boardStates()` and the store's counts; views/ shape the answers.
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
      boardHealth: (boardId: string) => Promise<KeptBoardHealth | null>;
      storageFull?: () => Promise<boolean>;
    },
  ) {
    this.startedAtMs = deps.clock.nowMs();
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  listBoards(): Promise<BoardState[]> {
    return this.deps.access.boardStates();
  }

  async health(): Promise<ServiceHealth> {
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
      uptimeSeconds: (this.now() - this.startedAtMs) / 1000,
      boards: { online, offline },
      database,
      storage,
    };
  }

  /** The public overview: boards, counts, recent jobs, the waitlist's length. */
  async overview(): Promise<BenchOverview> {
    const states = await this.deps.access.boardStates();
    const counts = await this.deps.store.counts(this.now());
    const recentJobs = await this.deps.store.recentJobs(20);
    const nowMs = this.now();
    return { nowMs, states, counts, recentJobs, waitlist: await this.deps.waitlistCount() };
  }

  /**
   * Who waits for `state`'s board (decisions 0555, 0605, 1030): the store's line of its pool, each
   * waiter for the pool or one instance asked for by id, first first, on every replica. `labels`
   * caches agents' labels.
   */
  private async waiting(state: BoardState, labels: Map<string, Promise<string>>): Promise<BoardWaiter[]> {
    const nowMs = this.now();
    const lines = [await this.deps.store.sessionQueue.waiters(state.resolved.board.id, nowMs)];
    const labelOf = (agentId: string) => {
      const known = labels.get(agentId) ?? this.deps.store.getAgent(agentId).then((a) => a?.label ?? agentId);
      labels.set(agentId, known);
      return known;
    };
    return Promise.all(
      lines.flatMap((line) =>
        line.map(async (w, i) => ({ agentId: w.agentId, agentLabel: await labelOf(w.agentId), queue: w.queue, position: i + 1, sinceMs: w.enqueuedAtMs })),
      ),
    );
  }

  async admin(): Promise<AdminOverview> {
    const states = await this.deps.access.boardStates();
    const sessions = await this.deps.store.listActiveSessions(this.now());
    const counts = await this.deps.store.counts(this.now());
    const health = await Promise.all(states.map(({ resolved }) => this.deps.boardHealth(resolved.board.id)));
    const labels = new Map<string, Promise<string>>();
    const waiting = await Promise.all(states.map((state) => this.waiting(state, labels)));
    const nowMs = this.now();
    return {
      nowMs,
      boards: states.map((state, i) => ({ state, health: health[i] ?? null, waiting: waiting[i] ?? [] })),
      sessions,
      recentJobs: await this.deps.store.recentJobs(50),
      recentFailures: await this.deps.store.recentFailures(20),
      counts,
      waitlist: await this.deps.waitlistCount(),
    };
  }
}
