/**
 * Board health on a real bench: consecutive infrastructure failures per board, and whether the
 * board is quarantined. Kept behind a small interface so the server can persist it (a row per
 * board) and survive restarts; `InMemoryQuarantineStore` is the default.
 */
import type { BoardHealth } from '../backend.js';

// Declared with the backend interface (board health is an optional capability of any backend).
export type { BoardHealth };

export interface QuarantineStore {
  /** The board's health; a board never seen is healthy. */
  get(boardId: string): Promise<BoardHealth>;
  put(boardId: string, health: BoardHealth): Promise<void>;
}

export const healthyBoard: BoardHealth = Object.freeze({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });

export class InMemoryQuarantineStore implements QuarantineStore {
  private readonly boards = new Map<string, BoardHealth>();

  async get(boardId: string): Promise<BoardHealth> {
    return this.boards.get(boardId) ?? healthyBoard;
  }

  async put(boardId: string, health: BoardHealth): Promise<void> {
    this.boards.set(boardId, { ...health });
  }
}

/** The reason text a quarantined board reports; the server shows it as is. */
export function quarantineReason(failures: number, lastFailure: string): string {
  return `quarantined after ${failures} consecutive infrastructure failures: ${lastFailure}`;
}

/** Health after one more infrastructure failure; quarantines at `threshold` consecutive failures. */
export function afterFailure(health: BoardHealth, message: string, threshold: number, nowMs: number): BoardHealth {
  const consecutiveFailures = health.consecutiveFailures + 1;
  // One line for a status page; the full message stays in the failed job.
  const lastFailure = failureSummary(message);
  const quarantine =
    health.quarantine ?? (consecutiveFailures >= threshold ? { sinceMs: nowMs, reason: quarantineReason(consecutiveFailures, lastFailure) } : undefined);
  return { consecutiveFailures, lastFailure, quarantine };
}

/** Health after a run that worked, or an administrator's release: the count starts again. */
export function afterSuccess(): BoardHealth {
  return { ...healthyBoard };
}

/** Longest summary kept: the status page and `/admin` show it on one line. */
export const SUMMARY_MAX_CHARS = 400;

/** Lines that say what went wrong, as OpenOCD and probe-rs print them (`Error: ...`, `** Verify Failed **`). */
const errorLine = /\b(error|errors|fail|failed|failure|not found|timed out|mismatch|refused|denied|unable|cannot)\b/i;

/**
 * One line for a failure message `<what failed>; last output:\n<tail>` (probe-commands.ts): the
 * first line, without its dangling `last output:`, then the tail's last line that names an
 * error (when none does: the last line if the first announced `last output:`, else nothing).
 * A tool's banner or `shutdown command invoked` says nothing about why a board is out of service; `Error: open failed` does.
 */
export function failureSummary(message: string): string {
  const [first = '', ...rest] = message.split(/\r?\n/);
  const tail = rest.map((l) => l.trim()).filter((l) => l !== '');
  const quotesOutput = /last output:\s*$/.test(first);
  const head = first.replace(/;?\s*last output:\s*$/, '').trim();
  // Without an error line, the last line only when the first announced the tool's output.
  const cause = [...tail].reverse().find((l) => errorLine.test(l)) ?? (quotesOutput ? tail.at(-1) : undefined);
  const line = cause && !head.includes(cause) ? `${head}; last error: ${cause}` : head;
  return line.length > SUMMARY_MAX_CHARS ? `${line.slice(0, SUMMARY_MAX_CHARS - 3)}...` : line;
}
