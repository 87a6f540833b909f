/**
 * The store's rules are written once, as generators of statements (`Steps`), and run by one
 * executor per dialect (decision 0545): SQLite's runs them synchronously inside one
 * `BEGIN IMMEDIATE` transaction, PostgreSQL's awaits each statement on a pooled connection. A rule
 * asks for a statement with `yield* all(...)`, `yield* one(...)` or `yield* run(...)` and gets its
 * answer back typed; it never knows which database answered.
 *
 * SQL text uses `?` placeholders in both dialects (the PostgreSQL executor numbers them `$1, $2...`).
 */

/**
 * One statement a rule asks for: every row, the first row, how many rows it changed, or a script
 * (several statements without parameters: a migration step, BEGIN, COMMIT).
 */
export interface Statement {
  readonly kind: 'all' | 'one' | 'run' | 'script';
  readonly sql: string;
  readonly params: readonly unknown[];
  /** How long the statement may take, when longer than any statement usually may (an index over every row). */
  readonly timeoutMs?: number;
  /**
   * The rule asks nothing more of its transaction once this statement succeeds: PostgreSQL's
   * executor sends COMMIT right behind it, answered with it (one round trip fewer, decision 0980).
   * A statement asked for after it is a fault of the rule, refused on both databases, with different
   * data left: on PostgreSQL the transaction has committed by then (the COMMIT went with this
   * statement), on SQLite the refusal rolls it back. Outside a transaction it means nothing.
   */
  readonly last?: boolean;
}

/** A rule (or a part of one): statements out, their answers in, a result at the end. */
export type Steps<T> = Generator<Statement, T, unknown>;

/** Every row of `sql`. */
export function* all<T>(sql: string, params: readonly unknown[] = []): Steps<T[]> {
  return (yield { kind: 'all', sql, params }) as T[];
}

/** The first row of `sql`, if any. */
export function* one<T>(sql: string, params: readonly unknown[] = []): Steps<T | undefined> {
  return (yield { kind: 'one', sql, params }) as T | undefined;
}

/** Runs `sql` (no rows wanted); how many rows it changed. `last`: nothing follows it in its transaction (`Statement.last`). */
export function* run(sql: string, params: readonly unknown[] = [], options: { last?: boolean } = {}): Steps<number> {
  return (yield { kind: 'run', sql, params, ...(options.last && { last: true }) }) as number;
}

/** Runs `script` (statements without parameters, or transaction control). */
export function* script(sql: string, options: { timeoutMs?: number } = {}): Steps<void> {
  yield { kind: 'script', sql, params: [], ...options };
}

/**
 * Runs `steps` to the end with a synchronous executor (SQLite, the relay's synchronous PostgreSQL
 * connection). A statement's error is thrown into the steps, so a step may roll back and rethrow.
 */
export function runStepsSync<T>(steps: Steps<T>, execute: (statement: Statement) => unknown): T {
  let next = steps.next();
  while (!next.done) {
    let answer: unknown;
    try {
      answer = execute(next.value);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(answer);
  }
  return next.value;
}

/** Runs `steps` to the end with an asynchronous executor (PostgreSQL), one statement at a time. */
export async function runSteps<T>(steps: Steps<T>, execute: (statement: Statement) => Promise<unknown>): Promise<T> {
  let next = steps.next();
  while (!next.done) {
    let answer: unknown;
    try {
      answer = await execute(next.value);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(answer);
  }
  return next.value;
}

/** `sql` with its `?` placeholders numbered as PostgreSQL wants them (`$1`, `$2`, ...). */
const numbered = new Map<string, string>();
export function numberPlaceholders(sql: string): string {
  let text = numbered.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    numbered.set(sql, text);
  }
  return text;
}
