/** Structured context of a log line (job id, board, request id, ...): fields in JSON logs. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** Where the server writes what operators need to see. Injected, so tests can capture it. */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  /** `cause` is logged in full (stack included); it never reaches a client. */
  error(message: string, cause?: unknown, fields?: LogFields): void;
  /** Optional: detail an operator asks for with `--log-level debug` (one line per request). */
  debug?(message: string, fields?: LogFields): void;
}

/** Logs to stderr, one line per event (plus the cause's stack for errors). */
export const consoleLogger: Logger = {
  info: (message) => console.error(`[hilbench] ${message}`),
  warn: (message) => console.error(`[hilbench] warning: ${message}`),
  error: (message, cause) => console.error(`[hilbench] error: ${message}`, cause ?? ''),
};

/** A logger that keeps every line in memory, for tests. */
export function memoryLogger(): Logger & { lines: string[]; causes: unknown[] } {
  const lines: string[] = [];
  const causes: unknown[] = [];
  return {
    lines,
    causes,
    info: (m) => lines.push(`info: ${m}`),
    warn: (m) => lines.push(`warn: ${m}`),
    error: (m, cause) => {
      lines.push(`error: ${m}`);
      causes.push(cause);
    },
  };
}
