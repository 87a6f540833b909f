import { type Clock, sleep } from '../../core/clock.js';
import { type DebugChannel, DebugChannelRefused, type WorkerLink } from '../worker/worker-link.js';
import type { DebuggerConnection } from '../../core/gdb/debugger-connection.js';
import type { GdbBridge } from './gdb-bridge.js';

type DebugLink = Required<Pick<WorkerLink, 'debugConnect'>>;

export interface RelayedDebuggersOptions {
  link: DebugLink;
  jobId: string;
  clock: Clock;
  /** Aborted when the job ends: the pump stops and every relayed connection closes. */
  signal: AbortSignal;
  /** Host ms before connecting again after the server could not be reached (doubles up to 30 000). */
  retryMs: number;
  logError: (message: string, cause?: unknown) => void;
}

/**
 * Brings the debuggers a bench server relays for a debug job (decision 0625) to the job's bridge:
 * each stream the server opens becomes one `DebuggerConnection`, so the bridge's rules (RSP
 * checked before the target, one debugger at a time, the idle timeout) hold for them as for a
 * local TCP debugger. The worker only ever dials out: one channel per job, dialled again when it
 * drops while the job runs. Never rejects.
 */
export async function pumpRelayedDebuggers(bridge: GdbBridge, options: RelayedDebuggersOptions): Promise<void> {
  const { link, jobId, signal } = options;
  let retryMs = options.retryMs;
  while (!signal.aborted) {
    const streams = new Map<number, RelayedConnection>();
    const closeAll = () => {
      for (const stream of streams.values()) stream.closedByPeer();
      streams.clear();
    };
    let settle: (how: { ended: boolean }) => void = () => undefined;
    const settled = new Promise<{ ended: boolean }>((resolve) => (settle = resolve));
    // A stream may open before the connect's answer is taken: what the bridge writes meanwhile waits.
    let channel: DebugChannel | undefined;
    const early: Array<(channel: DebugChannel) => void> = [];
    const toChannel = (fn: (channel: DebugChannel) => void) => (channel ? fn(channel) : void early.push(fn));
    try {
      channel = await link.debugConnect(jobId, {
        open: (stream) => {
          const connection = new RelayedConnection(
            (text) => toChannel((c) => c.data(stream, text)),
            (reason) => toChannel((c) => c.close(stream, reason)),
          );
          streams.set(stream, connection);
          connection.onClose(() => streams.delete(stream));
          bridge.accept(connection);
        },
        data: (stream, text) => streams.get(stream)?.receive(text),
        close: (stream) => streams.get(stream)?.closedByPeer(),
        ended: () => settle({ ended: true }),
        dropped: (reason) => {
          options.logError(`the debug channel of job ${jobId} dropped (${reason}); connecting again`);
          settle({ ended: false });
        },
      });
      for (const fn of early.splice(0)) fn(channel);
      retryMs = options.retryMs;
    } catch (err) {
      if (signal.aborted || err instanceof DebugChannelRefused) break;
      options.logError(`connecting the debug channel of job ${jobId} failed; trying again in ${retryMs} ms`, err);
      await sleep(options.clock, retryMs, signal).catch(() => undefined);
      retryMs = Math.min(retryMs * 2, 30_000);
      continue;
    }
    // The job ended here first: the server hears why its open streams close before the channel does.
    const onAbort = () => {
      for (const stream of streams.keys()) channel?.close(stream, `debug job ${jobId} ended on its worker`);
      settle({ ended: true });
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    const how = await settled;
    signal.removeEventListener('abort', onAbort);
    closeAll();
    channel.end();
    if (how.ended) break;
  }
}

/** One relayed stream: what the bridge writes goes to the channel at once (the channel keeps the order); what the debugger sent arrives by `receive`. */
class RelayedConnection implements DebuggerConnection {
  private dataListeners: Array<(text: string) => void> = [];
  private closeListeners: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly send: (text: string) => void,
    private readonly sendClose: (reason: string) => void,
  ) {}

  get destroyed(): boolean {
    return this.closed;
  }

  write(text: string): void {
    if (!this.closed && text !== '') this.send(text);
  }

  end(text = ''): void {
    if (this.closed) return;
    this.write(text);
    this.sendClose('the board closed the debug stream');
    this.markClosed();
  }

  destroy(): void {
    if (this.closed) return;
    this.sendClose('the board closed the debug stream');
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

  private markClosed(): void {
    this.closed = true;
    const listeners = this.closeListeners.splice(0);
    this.dataListeners = [];
    for (const listener of listeners) listener();
  }
}
