import { StringDecoder } from 'node:string_decoder';
import { execa, type ResultPromise } from 'execa';
import type { Clock } from '../../core/clock.js';
import { recordChild } from './child-ledger.js';
import { dieWithParent } from './parent-death.js';
import { processStartTicks } from './process-identity.js';

/**
 * One external tool we spawn (qemu-system-arm, Renode or its stand-in, openocd and probe-rs
 * through `runTool`), with what every backend needs from it: its output as lines and as a bounded
 * tail for failure reasons, a way to wait for a line, its exit as a promise, and a stop that
 * always ends it (SIGTERM, then SIGKILL after a grace period).
 *
 * No emulator or probe tool may outlive the bench (decision 0223): execa's `cleanup` kills it when
 * Node exits in order; on Linux it is spawned through `setpriv --pdeathsig KILL` so the kernel
 * kills it when Node dies any other way (kill -9, OOM killer); and while it runs it is written in
 * the child ledger (child-ledger.ts), so a restart can reap it where neither of those applied.
 */
export interface EmulatorExit {
  /** Exit status, or undefined when a signal ended it. */
  exitCode: number | undefined;
  signal: string | undefined;
  /** Whether `stop()` asked it to end (so the exit is ours, not the firmware's). */
  stoppedByUs: boolean;
}

export interface EmulatorProcessOptions {
  clock: Clock;
  /** How long SIGTERM may take before SIGKILL, host milliseconds. */
  killGraceMs: number;
  /** Lines of output kept for failure reasons. */
  tailLines?: number;
  cwd?: string;
  env?: Record<string, string>;
  /** Whether stdin is a pipe the caller writes to (Renode's console monitor) or closed. */
  stdin?: 'pipe' | 'ignore';
}

/** How long, after the process exits, its output streams may take to deliver their last bytes. */
const STREAM_DRAIN_MS = 500;

type LineListener = (line: string, stream: 'stdout' | 'stderr') => void;

export class EmulatorProcess {
  readonly pid: number | undefined;
  readonly exited: Promise<EmulatorExit>;
  private readonly child: ResultPromise;
  private readonly tail: string[] = [];
  private readonly tailLines: number;
  private readonly lineListeners = new Set<LineListener>();
  private readonly textListeners = new Set<(text: string, stream: 'stdout' | 'stderr') => void>();
  private readonly dataListeners = new Set<(bytes: Buffer, stream: 'stdout' | 'stderr') => void>();
  private exitInfo: EmulatorExit | undefined;
  private stopRequested = false;

  constructor(
    readonly file: string,
    readonly args: readonly string[],
    private readonly options: EmulatorProcessOptions,
  ) {
    this.tailLines = options.tailLines ?? 40;
    const launch = dieWithParent(file, args, options.env?.PATH);
    this.child = execa(launch.file, launch.args, {
      reject: false,
      buffer: false,
      cleanup: true,
      stdin: options.stdin ?? 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      cwd: options.cwd,
      env: options.env,
      extendEnv: true,
      // We send SIGKILL ourselves after our own grace period (on the injected clock).
      forceKillAfterDelay: false,
    });
    this.pid = this.child.pid;
    // Read right after the fork, before the child can exit and its pid be reused.
    const startTicks = this.pid === undefined ? undefined : processStartTicks(this.pid);
    const forget = this.pid === undefined || startTicks === undefined ? () => undefined : recordChild({ pid: this.pid, startTicks }, [file, ...args].join(' '));
    this.child.once('exit', forget);
    this.child.once('error', forget);
    for (const stream of ['stdout', 'stderr'] as const) {
      const readable = this.child[stream];
      if (!readable) continue;
      // Bytes stay bytes for `onData` (a UART on stdout need not be UTF-8); text is decoded with
      // a StringDecoder so a character split across chunks is not mangled.
      const decoder = new StringDecoder('utf8');
      let partial = '';
      readable.on('data', (bytes: Buffer) => {
        for (const listener of this.dataListeners) listener(bytes, stream);
        const text = decoder.write(bytes);
        if (!text) return;
        for (const listener of this.textListeners) listener(text, stream);
        partial += text;
        const lines = partial.split(/\r?\n/);
        partial = lines.pop() ?? '';
        for (const line of lines) this.addLine(line, stream);
      });
      readable.on('end', () => {
        if (partial) this.addLine(partial, stream);
        partial = '';
      });
    }
    // The process's own exit, not execa's result: that waits for stdout/stderr to close, which a
    // grandchild holding the pipes can delay for ever. The streams get a short, bounded moment
    // to deliver their last lines (QEMU's "qemu: fatal: ..." comes right before it exits).
    const streamsEnded = Promise.all(
      [this.child.stdout, this.child.stderr].map((s) => (s ? new Promise<void>((resolve) => s.once('close', () => resolve())) : undefined)),
    );
    this.exited = new Promise<EmulatorExit>((resolve) => {
      this.child.once('exit', (code, signal) => {
        const settle = () => {
          options.clock.clearTimeout(timer);
          resolve(this.recordExit(code ?? undefined, signal ?? undefined));
        };
        const timer = options.clock.setTimeout(settle, STREAM_DRAIN_MS);
        void streamsEnded.then(settle);
      });
      this.child.once('error', (err: Error) => {
        // Spawn failures (ENOENT, EACCES) come here and never as 'exit'.
        if (this.exitInfo) return;
        this.addLine(`hilbench: could not run ${file}: ${err.message}`, 'stderr');
        resolve(this.recordExit(undefined, undefined));
      });
    });
    // With reject:false execa settles without throwing; nothing else to wait for there.
    void this.child.catch(() => undefined);
  }

  /** The last lines the process printed (both streams, in arrival order). */
  outputTail(lines = this.tailLines): string {
    return this.tail.slice(-lines).join('\n');
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  get exit(): EmulatorExit | undefined {
    return this.exitInfo;
  }

  /** Calls `listener` for every complete output line; returns an unsubscribe function. */
  onLine(listener: LineListener): () => void {
    this.lineListeners.add(listener);
    return () => this.lineListeners.delete(listener);
  }

  /** Calls `listener` with raw output text as it arrives (prompts come without a newline). */
  onText(listener: (text: string, stream: 'stdout' | 'stderr') => void): () => void {
    this.textListeners.add(listener);
    return () => this.textListeners.delete(listener);
  }

  /** Calls `listener` with the raw output bytes as they arrive; returns an unsubscribe function. */
  onData(listener: (bytes: Buffer, stream: 'stdout' | 'stderr') => void): () => void {
    this.dataListeners.add(listener);
    return () => this.dataListeners.delete(listener);
  }

  /** Writes to the process's stdin (only with `stdin: 'pipe'`). */
  write(text: string): void {
    const stdin = this.child.stdin;
    if (!stdin || stdin.destroyed) throw new Error(`${this.file} has no open stdin`);
    stdin.write(text);
  }

  /** Ends the process: SIGTERM, then SIGKILL after `killGraceMs`. Resolves when it is gone. */
  async stop(): Promise<EmulatorExit> {
    if (this.exitInfo) return this.exitInfo;
    this.stopRequested = true;
    this.child.kill('SIGTERM');
    const { clock, killGraceMs } = this.options;
    const timer = clock.setTimeout(() => {
      if (!this.exitInfo) this.child.kill('SIGKILL');
    }, killGraceMs);
    try {
      return await this.exited;
    } finally {
      clock.clearTimeout(timer);
    }
  }

  private addLine(line: string, stream: 'stdout' | 'stderr') {
    this.tail.push(line);
    if (this.tail.length > this.tailLines * 4) this.tail.splice(0, this.tail.length - this.tailLines);
    for (const listener of this.lineListeners) listener(line, stream);
  }

  private recordExit(exitCode: number | undefined, signal: string | undefined): EmulatorExit {
    this.exitInfo ??= { exitCode, signal, stoppedByUs: this.stopRequested };
    return this.exitInfo;
  }
}

/** Whether a process with `pid` still exists (signal 0 probes without sending anything). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
