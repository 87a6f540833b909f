/**
 * The one error type of scenarios. `kind` decides the exit code of `hilbench run`
 * (docs/scenarios.md, "Exit codes"):
 * - `invalid`: the file (or the command line) is wrong; nothing ran (exit 2);
 * - `unsupported`: the file is valid but the target cannot run it (a backend without pins, no
 *   relay given); refused before the first step (exit 2);
 * - `failed`: a step's expectation did not hold (exit 1);
 * - `timeout`: a bounded wait ran out (exit 42, as wokwi-cli).
 */
export type ScenarioErrorKind = 'invalid' | 'unsupported' | 'failed' | 'timeout';

export class ScenarioError extends Error {
  override readonly name = 'ScenarioError';
  constructor(
    readonly kind: ScenarioErrorKind,
    message: string,
    /** For `invalid`: every problem, each starting with its path (`steps[3].wait-serial.timeout: ...`). */
    readonly issues: readonly string[] = [],
    options: { cause?: unknown; expected?: string; actual?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.expected = options.expected;
    this.actual = options.actual;
  }

  /** What the step expected and what came, for failure reports. */
  readonly expected: string | undefined;
  readonly actual: string | undefined;
}
