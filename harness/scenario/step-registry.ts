import type { z } from 'zod';
import { type StepDefinition, type StepNeed, stepNeedKinds } from './define-step.js';
import type { ScenarioContext } from './scenario-context.js';
import { createNodeStep } from './steps/create-node.js';
import { delayStep } from './steps/delay.js';
import { deviceFlashStep } from './steps/device-flash.js';
import { deviceResetStep } from './steps/device-reset.js';
import { endSessionStep } from './steps/end-session.js';
import { expectBulletinStep } from './steps/expect-bulletin.js';
import { expectExitStep } from './steps/expect-exit.js';
import { expectPinStep } from './steps/expect-pin.js';
import { flashStep } from './steps/flash.js';
import { getSessionStep } from './steps/get-session.js';
import { heartbeatStep } from './steps/heartbeat.js';
import { httpStep } from './steps/http.js';
import { openSessionStep } from './steps/open-session.js';
import { postItemStep } from './steps/post-item.js';
import { registerStep } from './steps/register.js';
import { setControlStep } from './steps/set-control.js';
import { voteStep } from './steps/vote.js';
import { waitJobStep } from './steps/wait-job.js';
import { waitSerialStep } from './steps/wait-serial.js';
import { writeSerialStep } from './steps/write-serial.js';

/**
 * Every step command, one file each under `steps/`. Adding a step: write `steps/<kind>.ts` with
 * `defineStep` and list it here. The order is the order of `scenarios/schema.json` and of the
 * step table in `scenarios/README.md` (harness/scenario/write-schema.ts).
 */
const stepList = [
  // bench service: agent sessions (docs/bench-api.md)
  registerStep,
  openSessionStep,
  getSessionStep,
  heartbeatStep,
  endSessionStep,
  flashStep,
  waitJobStep,
  // relay service (docs/relay-api.md)
  createNodeStep,
  postItemStep,
  voteStep,
  expectBulletinStep,
  // raw HTTP
  httpStep,
  // a device on a backend, directly (no server)
  deviceFlashStep,
  waitSerialStep,
  writeSerialStep,
  expectExitStep,
  deviceResetStep,
  delayStep,
  expectPinStep,
  setControlStep,
] as const;

type AnyStep = (typeof stepList)[number];
export type StepKind = AnyStep['kind'];
type StepOf<K extends StepKind> = Extract<AnyStep, { kind: K }>;
export type StepBody<K extends StepKind> = z.output<StepOf<K>['schema']>;
export type StepHandler<K extends StepKind> = (ctx: ScenarioContext, body: StepBody<K>) => Promise<void>;
export type StepRegistry = { [K in StepKind]: StepHandler<K> };

/**
 * Checks a list of step definitions and indexes it by kind. Throws, naming the step's file, for a
 * kind listed twice or a `needs` the runner does not know: such a step would otherwise be
 * checked against nothing before the run (it used to fall through to `none`).
 */
export function indexSteps(list: readonly StepDefinition[]): ReadonlyMap<string, StepDefinition> {
  const byKind = new Map<string, StepDefinition>();
  for (const step of list) {
    const file = `harness/scenario/steps/${step.kind}.ts`;
    if (!/^[a-z][a-z-]*$/.test(step.kind)) throw new Error(`${file}: step kind ${JSON.stringify(step.kind)} is not a lower-case-with-dashes name`);
    if (byKind.has(step.kind)) throw new Error(`${file}: step ${step.kind} is listed twice in harness/scenario/step-registry.ts`);
    if (!(stepNeedKinds as readonly unknown[]).includes(step.needs)) {
      throw new Error(`${file}: step ${step.kind} needs ${JSON.stringify(step.needs)}, which the runner does not know (known: ${stepNeedKinds.join(', ')})`);
    }
    byKind.set(step.kind, step);
  }
  return byKind;
}

// Checked when this module loads: a broken step definition stops every scenario run and test at once.
const stepsByKind = indexSteps(stepList);

/** Every step command, in file order. */
export const stepKinds: StepKind[] = stepList.map((s) => s.kind);

/** The zod schema of each step's body. */
export const stepBodies = Object.fromEntries(stepList.map((s) => [s.kind, s.schema])) as { [K in StepKind]: StepOf<K>['schema'] };

/** The handler of each step. */
export const stepHandlers = Object.fromEntries(stepList.map((s) => [s.kind, s.handler])) as unknown as StepRegistry;

/** The definition of step `kind`; throws for a kind no step file defines. */
export function stepDefinition(kind: string): StepDefinition {
  const step = stepsByKind.get(kind);
  if (!step) throw new Error(`no scenario step ${JSON.stringify(kind)} (harness/scenario/steps/${kind}.ts is not listed in harness/scenario/step-registry.ts)`);
  return step;
}

/** Which service or facility a step needs from the target; throws for a kind no step file defines. */
export function stepNeeds(kind: string): StepNeed {
  return stepDefinition(kind).needs;
}
