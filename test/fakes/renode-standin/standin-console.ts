/**
 * The stand-in's console output, as Renode writes it: log lines in Renode's format, monitor
 * errors, and the monitor's tokenizer.
 */

/** A monitor command that failed as Renode reports it (the header line, then this message). */
export class CommandError extends Error {}

export type LogLevel = 'INFO' | 'WARNING' | 'ERROR' | 'DEBUG';

/** Writes Renode's console: raw text, log lines and monitor errors. */
export interface StandinConsole {
  out(text: string): void;
  log(level: LogLevel, source: string | undefined, message: string): void;
  error(message: string): void;
}

/** A console on stdout; `hideLog` and `plain` as Renode's flags, `bracketed` as newer builds stamp lines. */
export function stdoutConsole(options: { hideLog: boolean; plain: boolean; bracketed: boolean }): StandinConsole {
  function out(text: string) {
    process.stdout.write(text);
  }

  function timestamp(): string {
    const d = new Date();
    const two = (n: number) => String(n).padStart(2, '0');
    const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds() * 10).padStart(4, '0')}`;
    return options.bracketed ? `[${time}]` : time;
  }

  return {
    out,
    /** Renode's console log backend: `<time> [LEVEL] <source>: <message>` (FormattedTextBackend). */
    log(level, source, message) {
      if (options.hideLog) return;
      out(`${timestamp()} [${level}] ${source ? `${source}: ` : ''}${message}\n`);
    },
    /** Monitor errors (Monitor.WriteError; red unless --plain). */
    error(message) {
      out(options.plain ? `${message}\n` : `\x1b[31m${message}\x1b[0m\n`);
    },
  };
}

/** Splits a monitor line into tokens; quoted strings keep their spaces and lose their quotes. */
export function tokenize(line: string): string[] {
  const tokens: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) tokens.push(m[1] ?? m[2]!);
  return tokens;
}
