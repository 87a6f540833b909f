import type { BenchClient, FlashOptions, Firmware } from './bench-client.js';
import type { CallOptions } from './bench-http.js';
import type { Job, Session } from './bench-types.js';

/**
 * An exclusive session on one board, kept alive while held: a heartbeat every third of its
 * `idle_seconds` until it is ended. Always end it: `await session.end()` in a `finally`, or
 * `await using session = await client.openSession('pico')`, which ends it however the block exits.
 */
export class BenchSession implements AsyncDisposable {
  readonly id: string;
  readonly board: string;
  /** The session as last answered (after opening, or the latest heartbeat). */
  current: Session;
  /** The last heartbeat failure, if one failed (the next one tries again). */
  heartbeatError: Error | undefined;
  private readonly timer: ReturnType<typeof setInterval> | undefined;
  private ended: Promise<Session> | undefined;

  constructor(
    private readonly client: BenchClient,
    session: Session,
    options: { heartbeat: boolean } = { heartbeat: true },
  ) {
    this.id = session.session_id;
    this.board = session.board;
    this.current = session;
    const everyMs = Math.max(1_000, (session.idle_seconds * 1000) / 3);
    this.timer = options.heartbeat ? setInterval(() => void this.beat(), everyMs) : undefined;
    // A session never keeps a process alive by itself.
    this.timer?.unref?.();
  }

  /** Flashes `firmware` on this session's board and answers the finished job. */
  flash(firmware: Firmware, options: Omit<FlashOptions, 'sessionId'> = {}): Promise<Job> {
    return this.client.flash(this.board, firmware, { ...options, sessionId: this.id });
  }

  /** Submits `firmware` on this session's board and answers the job as queued (watch it with `client.uart`). */
  submitFlash(firmware: Firmware, options: Omit<FlashOptions, 'sessionId'> = {}): Promise<Job> {
    return this.client.submitFlash(this.board, firmware, { ...options, sessionId: this.id });
  }

  /** Ends the session (once; later calls answer the same) and stops its heartbeats. */
  end(options: CallOptions = {}): Promise<Session> {
    clearInterval(this.timer);
    this.ended ??= this.client.endSession(this.id, options).then((s) => (this.current = s));
    return this.ended;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.end();
  }

  private async beat(): Promise<void> {
    if (this.ended) return;
    try {
      this.current = await this.client.heartbeat(this.id);
      this.heartbeatError = undefined;
    } catch (err) {
      this.heartbeatError = err as Error;
    }
  }
}
