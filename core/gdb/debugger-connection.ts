import type net from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Idle time, ms, before TCP keepalive starts probing a connection that carries a debugger's bytes:
 * its socket on the GDB port, and both legs of a debug stream a replica forwards. A peer that
 * vanished without closing (a laptop lid, a replica's host gone) is noticed by the kernel then,
 * rather than holding the board (the idle timeout) or the sockets for ever. 10 s: short against a
 * person stepping through code, long against the cost of a probe.
 */
export const DEBUGGER_KEEPALIVE_IDLE_MS = 10_000;

/**
 * One debugger's connection, wherever it comes from: a TCP socket on the GDB port, or a stream
 * relayed through a bench server (a worker's upgraded leg, or an in-process pair; both
 * `socketConnection`). Text is RSP in latin1 (one char per byte).
 */
export interface DebuggerConnection {
  write(text: string): void;
  /** Writes `text` (if any), then closes. */
  end(text?: string): void;
  /** Closes at once. */
  destroy(): void;
  readonly destroyed: boolean;
  onData(listener: (text: string) => void): void;
  /** Whether to stop reading (`onData`) for now: the slot holds a debugger whose packets the target has not answered. */
  hold(held: boolean): void;
  /** Once, when the debugger ended its side (a half-close): it sends nothing more, but still reads what it is sent until this side ends. */
  onEnd(listener: () => void): void;
  /** Once, when the connection has closed from either side. */
  onClose(listener: () => void): void;
}

/** A TCP socket (or any duplex stream) as a debugger connection: no Nagle delay, keepalive after `DEBUGGER_KEEPALIVE_IDLE_MS`, half-open allowed, errors seen as its close. */
export function socketConnection(socket: Duplex & Partial<Pick<net.Socket, 'setNoDelay' | 'setKeepAlive'>>): DebuggerConnection {
  socket.setNoDelay?.(true);
  // A debugger whose host vanished without closing is noticed by TCP keepalive, and then counts
  // as disconnected: the idle timeout frees the board.
  socket.setKeepAlive?.(true, DEBUGGER_KEEPALIVE_IDLE_MS);
  socket.on('error', () => undefined);
  // A debugger that ends its side (sends FIN) after its last packet still reads the answers: this
  // side stays open until the owner ends it (the slot does once they are written), instead of
  // ending at once, as a socket does by default, with the answers still on their way.
  socket.allowHalfOpen = true;
  // Reading stops while either holds: answers waiting to drain, or the owner's hold.
  let heldForDrain = false;
  let heldByOwner = false;
  const follow = () => void (heldForDrain || heldByOwner ? socket.pause() : socket.resume());
  return {
    write: (text) => {
      if (socket.write(Buffer.from(text, 'latin1')) || heldForDrain) return;
      // The debugger is not reading its answers: read none of its packets until they drain. What
      // waits stays bounded (the kernel's buffers, one high-water mark, the answers to one chunk)
      // and the sender is held back through every hop, instead of answers piling up here for as
      // long as it sends. Held, it stays attached as a silent debugger does (the job's stretched
      // deadline bounds both).
      heldForDrain = true;
      follow();
      socket.once('drain', () => {
        heldForDrain = false;
        follow();
      });
    },
    hold: (held) => {
      heldByOwner = held;
      follow();
    },
    end: (text) => {
      // Read again, whatever held it: a paused socket never reads the peer's FIN, so it would never close (and free its seat).
      heldForDrain = false;
      heldByOwner = false;
      follow();
      if (text === undefined) socket.end();
      else socket.end(Buffer.from(text, 'latin1'));
    },
    destroy: () => void socket.destroy(),
    get destroyed() {
      return socket.destroyed;
    },
    onData: (listener) => void socket.on('data', (data: Buffer) => listener(data.toString('latin1'))),
    onEnd: (listener) => void socket.once('end', listener),
    onClose: (listener) => void socket.once('close', listener),
  };
}
