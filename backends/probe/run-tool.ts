import { spawn } from 'node:child_process';
import type { Clock } from '../../core/clock.js';

/**
 * Runs one external tool (openocd, probe-rs) to completion with a deadline on the injected clock.
 * On timeout, abort or `stop()` the tool gets SIGTERM, then SIGKILL after `killGraceMs`: a probe
 * tool wedged in a USB transfer must never outlive the job that started it.
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
  /** stdout and stderr interleaved, the last `OUTPUT_KEEP_CHARS` characters. */
  output: string;
}

/** Enough to hold a full OpenOCD flash transcript; older output is cut from the front. */
export const OUTPUT_KEEP_CHARS = 16_384;

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
export function runTool(file: string, args: readonly string[], options: ToolRunOptions): Promise<ToolResult> {
  const { clock } = options;
  const command = formatCommand(file, args);
  return new Promise((resolve) => {
    let output = '';
    let stopped: ToolResult['stopped'];
    let killTimer: ReturnType<Clock['setTimeout']> | undefined;
    let settled = false;
    const append = (text: string) => {
      output = (output + text).slice(-OUTPUT_KEEP_CHARS);
      options.onOutput?.(text);
    };
    const finish = (result: Omit<ToolResult, 'command' | 'output' | 'stopped'>) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(deadline);
      if (killTimer) clock.clearTimeout(killTimer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve({ command, output, stopped, ...result });
    };

    const child = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ? { ...process.env, ...options.env } : process.env,
    });
    child.stdout.setEncoding('utf8').on('data', append);
    child.stderr.setEncoding('utf8').on('data', append);
    child.on('error', (err) => {
      // ENOENT/EACCES: the tool is not installed or not executable. Reported as exit 127, as a shell would.
      append(`${command}: ${err.message}\n`);
      finish({ exitCode: 127, exitSignal: null });
    });
    child.on('close', (exitCode, exitSignal) => finish({ exitCode, exitSignal }));

    const stop = (why: 'timeout' | 'cancelled') => {
      if (settled || stopped) return;
      stopped = why;
      child.kill('SIGTERM');
      killTimer = clock.setTimeout(() => {
        if (!settled) child.kill('SIGKILL');
      }, options.killGraceMs);
    };
    const onAbort = () => stop('cancelled');
    const deadline = clock.setTimeout(() => stop('timeout'), options.timeoutMs);
    if (options.signal?.aborted) stop('cancelled');
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
