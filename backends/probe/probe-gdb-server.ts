import type { Clock, TimerHandle } from '../../core/clock.js';
import { BackendError, type GdbStream, throwIfCancelled } from '../backend.js';
import { EmulatorProcess } from '../process/emulator-process.js';
import { freeTcpPort } from '../renode/free-tcp-port.js';
import { connectGdbServer, socketGdbStream } from '../socket-gdb-stream.js';
import { gdbServerArgs, type ProbeTarget, toolFailure } from './probe-commands.js';
import { formatCommand, OUTPUT_KEEP_LINES } from './run-tool.js';

export interface ProbeGdbServerOptions {
  boardId: string;
  probe: ProbeTarget;
  /** openocd or probe-rs, as the backend flashes with. */
  toolPath: string;
  toolEnv?: Record<string, string>;
  clock: Clock;
  /** How long the tool may take to reset the core and accept the connection, host ms. */
  startTimeoutMs: number;
  /** Between SIGTERM and SIGKILL when the session ends, host ms. */
  killGraceMs: number;
  signal?: AbortSignal;
}

/**
 * The probe tool's own GDB server for one debugger (`Device.debug` on the probe backend):
 * OpenOCD or `probe-rs gdb` started on a free loopback port with the core reset and halted,
 * connected to, and given as a `GdbStream`. The stream ends when either side closes or the tool
 * exits; `close` (or the end) stops the tool, and `stopped` resolves once it is gone, so the next
 * tool on the same probe never finds it still held.
 */
export async function startProbeGdbServer(options: ProbeGdbServerOptions): Promise<{ stream: GdbStream; stopped: Promise<void> }> {
  throwIfCancelled(options.signal, 'attaching a debugger');
  const port = await freeTcpPort();
  const args = gdbServerArgs(options.probe, port);
  const tool = new EmulatorProcess(options.toolPath, args, {
    clock: options.clock,
    killGraceMs: options.killGraceMs,
    env: options.toolEnv,
    tailLines: OUTPUT_KEEP_LINES,
  });
  // Stop polling for the port as soon as the tool has exited (no probe, a target that will not
  // halt): its exit status and output say why, sooner and better than a timeout would.
  const gaveUp = new AbortController();
  const onAbort = () => gaveUp.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  void tool.exited.then(() => gaveUp.abort(new Error('the GDB server exited')));
  let socket;
  try {
    socket = await connectGdbServer(
      { host: '127.0.0.1', port },
      { clock: options.clock, timeoutMs: options.startTimeoutMs, what: formatCommand(options.toolPath, args), outputTail: () => tool.outputTail(8), signal: gaveUp.signal },
    );
  } catch (err) {
    await tool.stop();
    throw startFailure(options, tool, args, err);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  const stream = socketGdbStream(socket);
  const stopped = (async () => {
    // Whichever ends first ends both: a tool that dies (the probe unplugged) closes the stream.
    await Promise.race([stream.closed, tool.exited]);
    await stream.close();
    // OpenOCD ends itself on the debugger's disconnect (its gdb-detach handler); give it the
    // grace period to resume the core and shut down before it is stopped.
    let grace: TimerHandle | undefined;
    await Promise.race([tool.exited, new Promise<void>((resolve) => (grace = options.clock.setTimeout(resolve, options.killGraceMs)))]);
    if (grace !== undefined) options.clock.clearTimeout(grace);
    await tool.stop();
  })();
  const closed = Promise.race([
    stream.closed,
    tool.exited.then((exit) => ({ reason: `${options.toolPath} exited (${exit.exitCode ?? exit.signal}) during the debug session: ${tool.outputTail(4)}` })),
  ]);
  return {
    stream: {
      write: (text) => stream.write(text),
      onData: (listener) => stream.onData(listener),
      closed,
      close: async () => {
        await stream.close();
        await stopped;
      },
    },
    stopped,
  };
}

/** Why the server never took the connection: the tool's own failure when it exited, else the wait's. */
function startFailure(options: ProbeGdbServerOptions, tool: EmulatorProcess, args: string[], err: unknown): unknown {
  if (options.signal?.aborted) return new BackendError('cancelled', `attaching a debugger to ${options.boardId} cancelled`, { cause: options.signal.reason });
  const exit = tool.exit;
  if (exit && !exit.stoppedByUs) {
    const result = {
      command: formatCommand(options.toolPath, args),
      exitCode: exit.exitCode ?? (exit.signal === undefined ? 127 : null),
      exitSignal: (exit.signal as NodeJS.Signals | undefined) ?? null,
      stopped: undefined,
      output: tool.outputTail(),
    };
    // Exit 0 before a connection is a failure too (the server should have waited for GDB).
    return (
      toolFailure('GDB server', options.boardId, result, options.startTimeoutMs) ??
      new BackendError('unavailable', `GDB server on ${options.boardId} (${result.command}) exited before a debugger could connect (exit status 0)`, { exitCode: 0, outputTail: result.output })
    );
  }
  return err;
}
