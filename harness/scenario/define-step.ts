import type { z } from 'zod';
import type { ScenarioContext } from './scenario-context.js';

/**
 * What a step needs from the target, checked before the first step runs (run-scenario.ts
 * `checkTarget`). `http` needs the service its `service` field names; `none` runs anywhere.
 */
export const stepNeedKinds = ['bench', 'relay', 'device', 'pins', 'http', 'none'] as const;
export type StepNeed = (typeof stepNeedKinds)[number];

/**
 * One scenario step command: its name in the file, what it needs, the zod schema of its body and
 * the handler that runs it (wokwi-cli keeps one class per command the same way). A handler throws
 * `ScenarioError` (`failed` or `timeout`) with what it expected and what came; the runner adds
 * file, step, time and UART tail.
 */
export interface StepDefinition<K extends string = string, S extends z.ZodType = z.ZodType> {
  readonly kind: K;
  readonly needs: StepNeed;
  readonly schema: S;
  /** True when the step works on a board: its own `board`, or the file's; the loader refuses it when neither is given. */
  readonly usesBoard?: boolean;
  /** Load-time rules zod cannot say alone; pushes each problem, prefixed with `at` (the step's path), into `issues`. */
  check?(body: z.output<S>, at: string, issues: string[]): void;
  // A method, so a definition with a precise body type is a StepDefinition of any body.
  handler(ctx: ScenarioContext, body: z.output<S>): Promise<void>;
}

/** Types a step definition (its body type comes from its schema); one per file in `steps/`. */
export function defineStep<K extends string, S extends z.ZodType>(definition: StepDefinition<K, S>): StepDefinition<K, S> {
  return definition;
}
