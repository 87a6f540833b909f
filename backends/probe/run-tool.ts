import type { Clock } from '../../core/clock.js';
import { EmulatorProcess } from '../process/emulator-process.js';

/**
 * Runs one external tool (openocd, probe-rs) to completion with a deadline on the injected clock.
 * On timeout or abort (a cancelled job, a closed device) the tool gets SIGTERM, then SIGKILL after
 * `killGraceMs`: a probe tool wedged in a USB transfer must never outlive the job that started it.
 */
export interface ToolRunOptions {
  clock: Clock;
  /** Deadline for the whole command, host milliseconds. */
  timeoutMs: number;
  /** Between SIGTERM and SIGKILL. */
  killGraceMs: number;
  signal?: AbortSignal;
  env?: Record<string, string>;
  /** Called with every piece of output (stdout and stderr interleaved) as it arrives. */
  onOutput?: (text: string) => void;
}

/** How a tool run ended. `stopped` says why we killed it, when we did. */
export interface ToolResult {
  command: string;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  stopped: 'timeout' | 'cancelled' | undefined;
  /** stdout and stderr interleaved, by line, the last `OUTPUT_KEEP_LINES` lines. */
  output: string;
}

/** Enough to hold a full OpenOCD flash transcript; older lines are dropped. */
export const OUTPUT_KEEP_LINES = 200;

/** The last `lines` non-empty lines of `output`, for failure messages. */
export function outputTail(output: string, lines = 8): string {
  return output
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .slice(-lines)
    .join('\n');
}

/** Quotes an argv for messages: `openocd -f interface/stlink.cfg -c "init; reset run"`. */
export function formatCommand(file: string, args: readonly string[]): string {
  return [file, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

/** Runs `file args`; resolves when it has exited (never rejects for a non-zero exit). */
export async function runTool(file: string, args: readonly string[], options: ToolRunOptions): Promise<ToolResult> {
  const { clock } = options;
  // The qemu backend's supervised process: exit from the process itself (not its pipes), stop =
  // SIGTERM then SIGKILL on the injected clock, killed by the kernel if Node dies (setpriv
  // --pdeathsig) and written in the child ledger so a restart reaps it if neither happened.
  const tool = new EmulatorProcess(file, args, { clock, killGraceMs: options.killGraceMs, env: options.env, tailLines: OUTPUT_KEEP_LINES });
  if (options.onOutput) tool.onText(options.onOutput);
  let stopped: ToolResult['stopped'];
  const stop = (why: 'timeout' | 'cancelled') => {
    if (stopped || tool.hasExited) return;
    stopped = why;
    void tool.stop();
  };
  const onAbort = () => stop('cancelled');
  const deadline = clock.setTimeout(() => stop('timeout'), options.timeoutMs);
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const exit = await tool.exited;
    // Neither a status nor a signal: the tool never started (ENOENT, EACCES); 127 as a shell says.
    const exitCode = exit.exitCode ?? (exit.signal === undefined ? 127 : null);
    return {
      command: formatCommand(file, args),
      exitCode,
      exitSignal: (exit.signal as NodeJS.Signals | undefined) ?? null,
      stopped,
      output: tool.outputTail(),
    };
  } finally {
    clock.clearTimeout(deadline);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
