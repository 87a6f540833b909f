import type { Clock } from '../../core/clock.js';
import type { EmulatorProcess } from '../process/emulator-process.js';
import { RenodeConsoleParser } from './renode-console-parser.js';
import { isMonitorError, parseRenodeLogLine, type RenodeLogLine } from './renode-log.js';

/**
 * Renode's console monitor (`renode --console`), driven one command at a time over stdin: send a
 * line, wait (bounded) for the next prompt (RenodeConsoleParser finds prompts, which come without
 * a newline), and look at what came in between.
 */
export class RenodeCommandError extends Error {
  override readonly name = 'RenodeCommandError';
  constructor(
    readonly command: string,
    readonly output: readonly string[],
    message: string,
  ) {
    super(message);
  }
}

/** The process ended, or the prompt did not come in time. `reason` says which. */
export class RenodeMonitorGone extends Error {
  override readonly name = 'RenodeMonitorGone';
  constructor(
    readonly reason: 'exited' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

export class RenodeMonitor {
  private readonly parser = new RenodeConsoleParser();
  private promptCount = 0;
  private readonly lines: string[] = [];
  /** Absolute index of `lines[0]` (old lines are dropped during long, chatty runs). */
  private lineBase = 0;
  private readonly logListeners = new Set<(line: RenodeLogLine) => void>();
  private readonly changeWaiters = new Set<() => void>();
  private machineName: string | undefined;

  constructor(
    private readonly process: EmulatorProcess,
    private readonly clock: Clock,
  ) {
    process.onText((text, stream) => {
      if (stream === 'stdout') this.consume(text);
    });
    void process.exited.then(() => this.notify());
  }

  /** The machine name of the last prompt (`monitor` before `mach create`). */
  get prompt(): string | undefined {
    return this.machineName;
  }

  /** Calls `listener` for every log line the console prints; returns an unsubscribe function. */
  onLog(listener: (line: RenodeLogLine) => void): () => void {
    this.logListeners.add(listener);
    return () => this.logListeners.delete(listener);
  }

  /** Waits for the first prompt after start-up (the banner comes first). */
  async ready(timeoutMs: number): Promise<void> {
    await this.until(() => this.promptCount > 0, timeoutMs, 'the first Renode monitor prompt');
  }

  /**
   * Sends `command` and resolves with the lines printed before the next prompt. Throws
   * `RenodeCommandError` when those lines carry a monitor error, `RenodeMonitorGone` when the
   * process exits or no prompt comes within `timeoutMs`.
   */
  async execute(command: string, timeoutMs: number): Promise<string[]> {
    if (command.includes('\n')) throw new Error(`one monitor command per line: ${JSON.stringify(command)}`);
    const promptsBefore = this.promptCount;
    const linesBefore = this.lineBase + this.lines.length;
    this.process.write(`${command}\n`);
    await this.until(() => this.promptCount > promptsBefore, timeoutMs, `the Renode monitor prompt after \`${command}\``);
    const output = this.lines.slice(Math.max(0, linesBefore - this.lineBase));
    const monitorLines = output.filter((line) => !parseRenodeLogLine(line));
    if (monitorLines.some(isMonitorError)) {
      throw new RenodeCommandError(command, output, `Renode refused \`${command}\`: ${monitorLines.filter((l) => l.trim()).join(' | ')}`);
    }
    return output;
  }

  private until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (done()) finish();
        else if (this.process.hasExited) {
          finish(new RenodeMonitorGone('exited', `Renode exited (${describeExit(this.process)}) while hilbench waited for ${what}`));
        }
      };
      const finish = (err?: Error) => {
        this.changeWaiters.delete(check);
        this.clock.clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const timer = this.clock.setTimeout(
        () => finish(new RenodeMonitorGone('timeout', `timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      this.changeWaiters.add(check);
      check();
    });
  }

  private consume(text: string) {
    for (const event of this.parser.push(text)) {
      if (event.kind === 'prompt') {
        this.machineName = event.name;
        this.promptCount++;
      } else this.lineSeen(event.text);
    }
    this.notify();
  }

  private lineSeen(line: string) {
    this.lines.push(line);
    if (this.lines.length > 2000) {
      this.lines.splice(0, 1000);
      this.lineBase += 1000;
    }
    const log = parseRenodeLogLine(line);
    if (log) for (const listener of this.logListeners) listener(log);
  }

  private notify() {
    for (const waiter of [...this.changeWaiters]) waiter();
  }
}

function describeExit(process: EmulatorProcess): string {
  const exit = process.exit;
  if (!exit) return 'still running';
  return exit.exitCode !== undefined ? `status ${exit.exitCode}` : `signal ${exit.signal}`;
}
