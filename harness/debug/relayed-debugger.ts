import { type Clock, sleep } from '../../core/clock.js';
import type { DebugEventBatch, WorkerLink } from '../worker/worker-link.js';
import type { DebuggerConnection, GdbBridge } from './gdb-bridge.js';

type DebugLink = Required<Pick<WorkerLink, 'debugEvents' | 'debugSend'>>;

export interface RelayedDebuggersOptions {
  link: DebugLink;
  jobId: string;
  clock: Clock;
  /** Aborted when the job ends: the pump stops and every relayed connection closes. */
  signal: AbortSignal;
  /** Host ms before asking again after the server could not be reached (doubles up to 30 000). */
  retryMs: number;
  logError: (message: string, cause?: unknown) => void;
}

/**
 * Brings the debuggers a bench server relays for a debug job (decision 0560) to the job's bridge:
 * each stream the server opens becomes one `DebuggerConnection`, so the bridge's rules (RSP
 * checked before the target, one debugger at a time, the idle timeout) hold for them as for a
 * local TCP debugger. The worker only ever dials out: it long-polls what debuggers sent and posts
 * what the target answers, in order per stream. Never rejects.
 */
export async function pumpRelayedDebuggers(bridge: GdbBridge, options: RelayedDebuggersOptions): Promise<void> {
  const { link, jobId, signal } = options;
  const streams = new Map<string, RelayedConnection>();
  let retryMs = options.retryMs;
  signal.addEventListener('abort', () => {
    for (const stream of streams.values()) stream.closedByPeer();
  });
  while (!signal.aborted) {
    let batch: DebugEventBatch;
    try {
      batch = await link.debugEvents(jobId, signal);
      retryMs = options.retryMs;
    } catch (err) {
      if (signal.aborted) break;
      options.logError(`fetching the debugger streams of job ${jobId} failed; asking again in ${retryMs} ms`, err);
      await sleep(options.clock, retryMs, signal).catch(() => undefined);
      retryMs = Math.min(retryMs * 2, 30_000);
      continue;
    }
    for (const event of batch.events) {
      if (event.kind === 'open') {
        const connection = new RelayedConnection(link, jobId, event.stream, options.logError);
        streams.set(event.stream, connection);
        connection.onClose(() => streams.delete(event.stream));
        bridge.accept(connection);
      } else if (event.kind === 'data') streams.get(event.stream)?.receive(event.text);
      else streams.get(event.stream)?.closedByPeer();
    }
    if (batch.ended) break;
  }
  for (const stream of streams.values()) stream.closedByPeer();
}

/** One relayed stream: what the bridge writes is posted to the server in order; what the debugger sent arrives by `receive`. */
class RelayedConnection implements DebuggerConnection {
  private dataListeners: Array<(text: string) => void> = [];
  private closeListeners: Array<() => void> = [];
  private sending: Promise<void> = Promise.resolve();
  private outgoing = '';
  private closing: string | undefined;
  private inFlight = false;
  private closed = false;

  constructor(
    private readonly link: DebugLink,
    private readonly jobId: string,
    private readonly stream: string,
    private readonly logError: RelayedDebuggersOptions['logError'],
  ) {}

  get destroyed(): boolean {
    return this.closed;
  }

  write(text: string): void {
    if (!this.closed) this.post(text);
  }

  end(text = ''): void {
    if (this.closed) return;
    this.post(text, 'the board closed the debug stream');
    this.markClosed();
  }

  destroy(): void {
    if (this.closed) return;
    this.post('', 'the board closed the debug stream');
    this.markClosed();
  }

  onData(listener: (text: string) => void): void {
    this.dataListeners.push(listener);
  }

  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  receive(text: string): void {
    if (!this.closed) for (const listener of this.dataListeners) listener(text);
  }

  /** The server closed the stream (the debugger went, or its packet was refused): nothing is sent back. */
  closedByPeer(): void {
    if (!this.closed) this.markClosed();
  }

  /**
   * Queues `text` (and the close) for the server. One request at a time keeps the order; what the
   * target says while one is on its way goes out together in the next (an ack and its reply in one).
   */
  private post(text: string, closed?: string): void {
    this.outgoing += text;
    if (closed !== undefined) this.closing = closed;
    if (this.inFlight) return;
    this.inFlight = true;
    this.sending = this.flush();
  }

  private async flush(): Promise<void> {
    while (this.outgoing !== '' || this.closing !== undefined) {
      const [text, closed] = [this.outgoing, this.closing];
      this.outgoing = '';
      this.closing = undefined;
      try {
        await this.link.debugSend(this.jobId, this.stream, text, closed);
      } catch (err) {
        this.logError(`sending to debug stream ${this.stream} of job ${this.jobId} failed; the stream is closed`, err);
        this.outgoing = '';
        this.closing = undefined;
        this.closedByPeer();
      }
    }
    this.inFlight = false;
  }

  private markClosed(): void {
    this.closed = true;
    const listeners = this.closeListeners.splice(0);
    this.dataListeners = [];
    for (const listener of listeners) listener();
  }
}
