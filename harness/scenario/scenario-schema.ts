import { z } from 'zod';
import { backendNames } from '../../boards/board-schema.js';
import { clockKinds, type ClockKind, durationSchema, varName } from './step-fields.js';
import { type StepBody, stepBodies, type StepKind, stepKinds } from './step-registry.js';

/**
 * The scenario file format, version 1 (docs/scenarios.md): the file's header, and the steps of
 * harness/scenario/steps/ (one zod schema per command, listed in step-registry.ts). The loader
 * validates a file whole with them before the first step runs, and
 * `scenarios/schema.json` is generated from `scenarioJsonSchema()` (harness/scenario/write-schema.ts).
 *
 * Step names follow wokwi-cli's TestScenario where the meaning is the same (`wait-serial`,
 * `write-serial`, `delay`, `expect-pin`, `set-control`); everything else is ours.
 */

export const SCENARIO_VERSION = 1;

export { clockKinds, type ClockKind, durationMs, durationSchema, expectSchema, type ResponseExpect } from './step-fields.js';
export { type StepBody, stepBodies, type StepKind, stepKinds, stepNeeds } from './step-registry.js';

/** One parsed step: its command, its body and an optional display name. */
export type ScenarioStep = { [K in StepKind]: { kind: K; name?: string; body: StepBody<K> } }[StepKind];

/** The `backends:` filter of a file: backend names, as board files name them. */
export const backendFilter = z.array(z.enum(backendNames)).min(1);

/** The file, without its steps (validated step by step for precise error paths). */
export const scenarioHeaderSchema = z.strictObject({
  version: z.literal(SCENARIO_VERSION).describe('format version; this is 1'),
  name: z.string().min(1).describe('shown in reports'),
  description: z.string().optional().describe('free text for people'),
  author: z.string().optional().describe('free text for people'),
  clock: z.enum(clockKinds).optional().describe('default clock of every wait (default simulated)'),
  timeout: durationSchema.optional().describe('default timeout of every wait and of every request (default 30s)'),
  board: z.string().min(1).optional().describe('default board id of steps that take one'),
  backends: backendFilter.optional().describe('run only on these backends (others report the scenario skipped)'),
  'time-limit': durationSchema.optional().describe('the most real time the whole scenario may take (default 10m); past it the run stops as a timeout'),
  'fail-text': z
    .array(z.string().min(1))
    .optional()
    .describe('fail at once when any of these texts shows up in device UART output or a job\'s UART (wokwi-cli --fail-text)'),
  vars: z.record(varName, z.string()).optional().describe('initial variables; --var name=value overrides'),
  steps: z.array(z.unknown()).min(1).describe('the steps, run in order until the first failure'),
});

export interface Scenario {
  version: 1;
  name: string;
  description?: string;
  author?: string;
  clock: ClockKind;
  timeoutMs: number;
  board?: string;
  backends?: z.infer<typeof backendFilter>;
  /** Texts that fail the scenario as soon as they appear in UART output. */
  failText: string[];
  /** Real milliseconds the whole run may take (`time-limit`); the runner's default when absent. */
  timeLimitMs?: number;
  vars: Record<string, string>;
  steps: ScenarioStep[];
  /** The file it came from (absolute), for failures and relative firmware paths. */
  file: string;
}

/** The JSON Schema of the whole file (draft 2020-12), for editors and `scenarios/schema.json`. */
export function scenarioJsonSchema(): Record<string, unknown> {
  const stepSchema = z.union(
    stepKinds.map((kind) => z.strictObject({ name: z.string().optional().describe('shown in reports'), [kind]: stepBodies[kind] }).describe(`step: ${kind}`)),
  );
  const file = scenarioHeaderSchema.extend({ steps: z.array(stepSchema).min(1) });
  const json = z.toJSONSchema(file, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    $schema: json.$schema,
    $id: 'https://hilbench.dev/schemas/scenario-1.json',
    title: 'hilbench scenario file, version 1',
    description: 'Generated from harness/scenario/scenario-schema.ts by harness/scenario/write-schema.ts; do not edit. See docs/scenarios.md.',
    ...Object.fromEntries(Object.entries(json).filter(([k]) => k !== '$schema')),
  };
}
