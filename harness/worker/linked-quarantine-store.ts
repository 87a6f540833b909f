import type { BoardHealth } from '../../backends/backend.js';
import { healthyBoard, type QuarantineStore } from '../../backends/probe/quarantine-store.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { BoardHealthLink } from './worker-link.js';

/**
 * Board health of a worker's boards kept by the server (decision 0421), as the `QuarantineStore`
 * a worker's probe backend takes: every read asks the server (so an administrator's release on
 * any replica is seen at the next availability check), every write goes to it. The network must
 * not fail a job: a read that cannot reach the server answers the last record known here, and a
 * write that cannot is kept and sent again on the injected clock (newest wins) until it arrives.
 */
export class LinkedQuarantineStore implements QuarantineStore {
  private readonly known = new Map<string, BoardHealth>();
  /** Writes the server has not taken yet, newest per board. */
  private readonly unsent = new Map<string, BoardHealth>();
  /** Writes per board, one at a time, so they reach the server in order. */
  private readonly writing = new Map<string, Promise<void>>();
  private retryTimer: TimerHandle | undefined;
  private retryMs: number;
  private closed = false;

  constructor(
    private readonly options: {
      link: BoardHealthLink;
      clock: Clock;
      /** Host ms before a write that failed is sent again; doubles up to 30 000. Default 1 000. */
      retryMs?: number;
      logError: (message: string, cause?: unknown) => void;
    },
  ) {
    this.retryMs = options.retryMs ?? 1_000;
  }

  async get(boardId: string): Promise<BoardHealth> {
    // A write not delivered yet is newer than anything the server can answer.
    const pending = this.unsent.get(boardId);
    if (pending) return pending;
    try {
      const health = await this.options.link.getBoardHealth(boardId);
      this.known.set(boardId, health);
      return health;
    } catch (err) {
      this.options.logError(`reading the health of board ${boardId} from the server failed; using the last known record`, err);
      return this.known.get(boardId) ?? healthyBoard;
    }
  }

  put(boardId: string, health: BoardHealth): Promise<void> {
    const record = { ...health };
    this.known.set(boardId, record);
    this.unsent.set(boardId, record);
    const write = (this.writing.get(boardId) ?? Promise.resolve()).then(() => this.send(boardId, record));
    this.writing.set(boardId, write);
    return write;
  }

  /** Stops sending again what did not arrive (the worker is stopping). */
  close(): void {
    this.closed = true;
    if (this.retryTimer !== undefined) this.options.clock.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private async send(boardId: string, record: BoardHealth): Promise<void> {
    // A newer write of the board supersedes this one.
    if (this.unsent.get(boardId) !== record) return;
    try {
      await this.options.link.putBoardHealth(boardId, record);
      if (this.unsent.get(boardId) === record) this.unsent.delete(boardId);
      this.retryMs = this.options.retryMs ?? 1_000;
    } catch (err) {
      this.options.logError(`writing the health of board ${boardId} to the server failed; sending it again in ${this.retryMs} ms`, err);
      this.armRetry();
    }
  }

  private armRetry(): void {
    if (this.closed || this.retryTimer !== undefined) return;
    this.retryTimer = this.options.clock.setTimeout(() => {
      this.retryTimer = undefined;
      this.retryMs = Math.min(this.retryMs * 2, 30_000);
      for (const [boardId, record] of this.unsent) {
        const write = (this.writing.get(boardId) ?? Promise.resolve()).then(() => this.send(boardId, record));
        this.writing.set(boardId, write);
      }
    }, this.retryMs);
  }
}
