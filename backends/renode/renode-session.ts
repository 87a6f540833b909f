import net from 'node:net';
import type { Board } from '../../boards/board-schema.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { BackendError, type BackendErrorKind, throwIfCancelled } from '../backend.js';
import { EmulatorProcess } from '../process/emulator-process.js';
import { freeTcpPort } from './free-tcp-port.js';
import type { RenodeBackendOptions } from './renode-backend-options.js';
import { RENODE_ARGS, renodeSetupCommands, type SetupStep } from './renode-command.js';
import { RenodeCommandError, RenodeMonitor, RenodeMonitorGone } from './renode-monitor.js';
import { RENODE_DRAIN_TIMEOUT_MS } from './wait-for-uart-quiet.js';

/**
 * Starting and stopping one Renode process for a device: the process, its monitor, the machine
 * set up with the firmware loaded and the UART socket connected, all before the emulation starts;
 * and the polite `quit`, then signals, on the way out.
 */

/** One running Renode process with its machine set up, as `RenodeDevice` drives it. */
export interface RenodeSession {
  process: EmulatorProcess;
  monitor: RenodeMonitor;
  socket: net.Socket;
  socketClosed: Promise<void>;
  releasedAtMs?: number;
  /** A CPU abort seen in the log, with when (relative to release). */
  crash?: { message: string; atNanos: number };
  /**
   * Set once a crashed run has drained the socket: the core is halted and the run is over, so
   * bytes arriving later are counted as dropped, not delivered. Cleared by `reset`.
   */
  uartEnded?: boolean;
}

/** What starting and stopping a session needs from its device. */
export interface RenodeSessionContext {
  board: Board;
  /** The Renode executable found on PATH or given. */
  renode: string;
  options: RenodeBackendOptions;
  clock: Clock;
  /** The device's scratch dir, Renode's working directory. */
  workDir: string;
}

/** Attempts at a UART port before giving up: another process can take a free port before Renode binds it. */
const PORT_ATTEMPTS = 3;

/** Which error kind a failed setup step is: the platform is the board's, the ELF the user's. */
const setupFailureKind: Record<SetupStep, BackendErrorKind> = {
  machine: 'flash-failed',
  platform: 'unavailable',
  elf: 'bad-image',
  terminal: 'flash-failed',
  connect: 'flash-failed',
};

/** Bound on each monitor command's prompt, host ms. */
export function commandTimeoutMs(ctx: RenodeSessionContext): number {
  return ctx.options.commandTimeoutMs ?? 30_000;
}

/**
 * Starts Renode with the machine set up and `elfPath` loaded, connects to its UART socket and
 * hands the session to `attach` before returning it. On any failure (or `signal`) Renode is stopped.
 */
export async function startRenodeSession(
  ctx: RenodeSessionContext,
  elfPath: string,
  signal: AbortSignal | undefined,
  attach: (session: RenodeSession) => void,
): Promise<RenodeSession> {
  const child = new EmulatorProcess(ctx.renode, RENODE_ARGS, {
    clock: ctx.clock,
    killGraceMs: ctx.options.killGraceMs ?? 3000,
    stdin: 'pipe',
    cwd: ctx.workDir,
    env: ctx.options.env as Record<string, string> | undefined,
  });
  const monitor = new RenodeMonitor(child, ctx.clock);
  const abandon = async (err: unknown): Promise<never> => {
    await child.stop();
    throw err;
  };
  const onAbort = () => void child.stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    try {
      await monitor.ready(ctx.options.startTimeoutMs ?? 60_000);
    } catch (err) {
      throw monitorFailure(err, child, 'flash-failed', 'starting Renode');
    }
    throwIfCancelled(signal, 'flash');
    const port = await setUp(ctx, child, monitor, elfPath, signal);
    throwIfCancelled(signal, 'flash');
    const socket = await connectUart(ctx, child, port);
    const session: RenodeSession = { process: child, monitor, socket, socketClosed: new Promise((resolve) => socket.once('close', () => resolve())) };
    attach(session);
    return session;
  } catch (err) {
    return abandon(signal?.aborted ? new BackendError('cancelled', 'flash cancelled while Renode was starting', { cause: signal.reason }) : err);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Runs the setup commands; retries the terminal on another port if the chosen one was taken. */
async function setUp(
  ctx: RenodeSessionContext,
  child: EmulatorProcess,
  monitor: RenodeMonitor,
  elfPath: string,
  signal: AbortSignal | undefined,
): Promise<number> {
  const pickPort = ctx.options.pickPort ?? freeTcpPort;
  let port = await pickPort();
  const commands = renodeSetupCommands(ctx.board, elfPath, port);
  for (const { step, command } of commands) {
    throwIfCancelled(signal, 'flash');
    if (step === 'terminal') {
      for (let attempt = 1; ; attempt++) {
        const terminalCommand = command.replace(/CreateServerSocketTerminal \d+/, `CreateServerSocketTerminal ${port}`);
        try {
          await monitor.execute(terminalCommand, commandTimeoutMs(ctx));
          break;
        } catch (err) {
          const inUse = err instanceof RenodeCommandError && /AddressAlreadyInUse|Address already in use/.test(err.output.join('\n'));
          if (!inUse || attempt >= PORT_ATTEMPTS) throw setupFailure(ctx.board, err, child, step, attempt);
          port = await pickPort();
        }
      }
      continue;
    }
    try {
      await monitor.execute(command, commandTimeoutMs(ctx));
    } catch (err) {
      throw setupFailure(ctx.board, err, child, step, 1);
    }
  }
  return port;
}

function setupFailure(board: Board, err: unknown, child: EmulatorProcess, step: SetupStep, attempts: number): BackendError {
  if (!(err instanceof RenodeCommandError)) return monitorFailure(err, child, 'flash-failed', `setting up the ${step}`);
  const what = {
    machine: 'create the machine',
    platform: `load the platform ${board.backends.renode?.platform} for ${board.id}`,
    elf: 'load the firmware ELF',
    terminal: attempts > 1 ? `create the UART socket terminal (${attempts} ports tried)` : 'create the UART socket terminal',
    connect: `connect ${board.backends.renode?.uart} to the UART terminal`,
  }[step];
  return new BackendError(setupFailureKind[step], `Renode could not ${what}: ${err.message}`, { outputTail: err.output.join('\n') || child.outputTail() });
}

/** Connects to the UART server socket terminal Renode opened on `port`, bounded by the command timeout. */
async function connectUart(ctx: RenodeSessionContext, child: EmulatorProcess, port: number): Promise<net.Socket> {
  const timeoutMs = commandTimeoutMs(ctx);
  return new Promise<net.Socket>((resolve, reject) => {
    // Renode listens on 0.0.0.0; we connect over loopback.
    const socket = net.createConnection({ host: '127.0.0.1', port });
    const timer = ctx.clock.setTimeout(() => {
      socket.destroy();
      reject(new BackendError('flash-failed', `timed out after ${timeoutMs} ms connecting to Renode's UART terminal on port ${port}`, { outputTail: child.outputTail() }));
    }, timeoutMs);
    socket.once('error', (err) => {
      ctx.clock.clearTimeout(timer);
      reject(new BackendError('flash-failed', `could not connect to Renode's UART terminal on port ${port}: ${err.message}`, { cause: err, outputTail: child.outputTail() }));
    });
    socket.once('connect', () => {
      ctx.clock.clearTimeout(timer);
      socket.removeAllListeners('error');
      socket.on('error', () => undefined); // a closing Renode resets the connection; the exit path reports it
      resolve(socket);
    });
  });
}

/** A monitor failure as a `BackendError` of `kind`, with Renode's exit and output tail when it is gone. */
export function monitorFailure(err: unknown, child: EmulatorProcess, kind: BackendErrorKind, doing: string): BackendError {
  if (err instanceof BackendError) return err;
  if (err instanceof RenodeMonitorGone) {
    return new BackendError(kind, `${doing}: ${err.message}`, { exitCode: child.exit?.exitCode, outputTail: child.outputTail(), cause: err });
  }
  if (err instanceof RenodeCommandError) return new BackendError(kind, `${doing}: ${err.message}`, { outputTail: err.output.join('\n'), cause: err });
  return new BackendError('internal', `${doing}: ${(err as Error).message}`, { outputTail: child.outputTail(), cause: err });
}

/** Runs one monitor command of a started session; a failure becomes a `BackendError` of `kind`. */
export async function renodeCommand(ctx: RenodeSessionContext, session: RenodeSession, command: string, kind: BackendErrorKind): Promise<string[]> {
  try {
    return await session.monitor.execute(command, commandTimeoutMs(ctx));
  } catch (err) {
    throw monitorFailure(err, session.process, kind, `Renode command \`${command}\``);
  }
}

/**
 * Ends a session: `quit` first, then signals, then waits (bounded) for Renode's end of the UART
 * socket to close before destroying ours.
 */
export async function stopRenodeSession(ctx: RenodeSessionContext, session: RenodeSession): Promise<void> {
  // The socket stays open until Renode is gone: bytes still in flight are read and counted as
  // dropped (the session is over, so the capture no longer delivers them), not thrown away.
  if (!session.process.hasExited) {
    // Ask politely first (Renode tidies up its sockets), then signals.
    try {
      session.process.write('quit\n');
      await Promise.race([
        session.process.exited,
        new Promise((resolve) => {
          const timer = ctx.clock.setTimeout(() => resolve(undefined), ctx.options.quitTimeoutMs ?? 3000);
          void session.process.exited.then(() => ctx.clock.clearTimeout(timer));
        }),
      ]);
    } catch {
      // stdin already closed: fall through to the signals.
    }
  }
  await session.process.stop();
  // Renode's exit closes its end of the socket; bounded all the same, as every wait here.
  let timer: TimerHandle | undefined;
  await Promise.race([
    session.socketClosed,
    new Promise<void>((resolve) => (timer = ctx.clock.setTimeout(resolve, ctx.options.drainTimeoutMs ?? RENODE_DRAIN_TIMEOUT_MS))),
  ]);
  if (timer) ctx.clock.clearTimeout(timer);
  session.socket.destroy();
}
