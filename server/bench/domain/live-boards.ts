import type { Board, BackendName } from '../../../boards/board-schema.js';
import type { Clock } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BoardHealthControl } from '../../../backends/backend.js';
import type { ResolvedBoard } from '../../../harness/board-resolution.js';

/** Default for `LiveBoardsOptions.cacheMs`. */
export const DEFAULT_AVAILABILITY_CACHE_MS = 5_000;

export interface LiveBoardsOptions {
  clock: Clock;
  boards: readonly Board[];
  /**
   * Host milliseconds (injected clock) a board's resolution is reused before it is asked again.
   * Short, so a board that goes offline (quarantine, emulator removed, probe unplugged, a worker
   * gone silent) shows within seconds, yet a busy listing does not read the store per request.
   */
  cacheMs?: number;
  logger: Logger;
  /**
   * Where availability comes from: the reports of the workers serving the board, in the store
   * (remote-boards.ts), whether the worker runs in this process or on another host. It never rejects.
   */
  resolve: (board: Board) => Promise<ResolvedBoard>;
  /**
   * Who keeps a board's health (stored-board-health.ts): the worker serving it, through the store,
   * known from the board's last resolution. Absent: no board keeps health.
   */
  healthKeeper?: (boardId: string) => { name: BackendName; control: BoardHealthControl } | undefined;
}

interface CacheEntry {
  resolved: ResolvedBoard;
  checkedAtMs: number;
}

/**
 * Which backend runs each board and whether it can run now, as its workers reported it, read again
 * when it matters (listing, snapshot, opening a session, submitting a job) and cached for
 * `cacheMs` (or until `invalidate`: a worker's report, a health change). Concurrent callers share
 * one check per board; a check never rejects. Status changes are logged once each: offline as a
 * warning with the reason, back online as info.
 */
export class LiveBoards {
  private readonly byId: ReadonlyMap<string, Board>;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, { generation: number; promise: Promise<ResolvedBoard> }>();
  /** Bumped by `invalidate`, so a check that started before it cannot refill the cache. */
  private readonly generations = new Map<string, number>();
  /** The last resolution of each board, kept across `invalidate`, to log only changes. */
  private readonly lastSeen = new Map<string, ResolvedBoard>();

  constructor(private readonly options: LiveBoardsOptions) {
    this.byId = new Map(options.boards.map((b) => [b.id, b]));
    this.cacheMs = options.cacheMs ?? DEFAULT_AVAILABILITY_CACHE_MS;
  }

  /** Board ids in catalog order. */
  get ids(): string[] {
    return [...this.byId.keys()];
  }

  /** The catalog entry of `boardId`, whether or not it can run. */
  board(boardId: string): Board | undefined {
    return this.byId.get(boardId);
  }

  /** Every board, each resolved at most `cacheMs` ago, in catalog order. */
  all(): Promise<ResolvedBoard[]> {
    return Promise.all(this.ids.map((id) => this.get(id)));
  }

  /**
   * `boardId` resolved at most `cacheMs` ago (`invalidate` first to force a new check).
   * Throws only for a board not in the catalog (a programming error: callers check first).
   */
  async get(boardId: string): Promise<ResolvedBoard> {
    const board = this.byId.get(boardId);
    if (!board) throw new Error(`board ${boardId} is not in this bench's catalog`);
    const cached = this.cache.get(boardId);
    if (cached && this.options.clock.nowMs() - cached.checkedAtMs < this.cacheMs) return cached.resolved;
    const generation = this.generations.get(boardId) ?? 0;
    const running = this.inFlight.get(boardId);
    if (running && running.generation === generation) return running.promise;
    const promise = this.check(board, generation);
    this.inFlight.set(boardId, { generation, promise });
    return promise;
  }

  /** The last resolution of `boardId` without asking anyone (undefined before its first check). */
  lastKnown(boardId: string): ResolvedBoard | undefined {
    return this.lastSeen.get(boardId);
  }

  /** Forgets `boardId`'s cached availability (its health just changed): the next `get` asks the backend. */
  invalidate(boardId: string): void {
    this.cache.delete(boardId);
    this.generations.set(boardId, (this.generations.get(boardId) ?? 0) + 1);
  }

  /** Who keeps `boardId`'s health, as the server reads and changes it (through the store), if anyone does. */
  healthControl(boardId: string): { name: BackendName; control: BoardHealthControl } | undefined {
    if (!this.byId.has(boardId)) return undefined;
    return this.options.healthKeeper?.(boardId);
  }

  private async check(board: Board, generation: number): Promise<ResolvedBoard> {
    let resolved: ResolvedBoard;
    try {
      resolved = await this.options.resolve(board);
    } catch (err) {
      // The resolver catches what it can itself; this is the last line of defence (a store error).
      resolved = { board, backend: null, backendName: 'none', offlineReason: `checking ${board.id}'s backend failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    const checkedAtMs = this.options.clock.nowMs();
    if ((this.generations.get(board.id) ?? 0) === generation) {
      this.report(this.lastSeen.get(board.id), resolved);
      this.lastSeen.set(board.id, resolved);
      this.cache.set(board.id, { resolved, checkedAtMs });
    }
    const running = this.inFlight.get(board.id);
    if (running?.generation === generation) this.inFlight.delete(board.id);
    return resolved;
  }

  private report(before: ResolvedBoard | undefined, after: ResolvedBoard): void {
    const { logger } = this.options;
    const id = after.board.id;
    if (after.offlineReason !== null) {
      if (before?.offlineReason !== after.offlineReason) logger.warn(`board ${id} is offline: ${after.offlineReason}`);
    } else if (before && before.offlineReason !== null) {
      logger.info(`board ${id} is back online on ${after.backendName}`);
    }
  }
}
