import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineStep, type StepDefinition } from './define-step.js';
import { indexSteps, stepKinds, stepNeeds } from './step-registry.js';

const stepsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'steps');
const step = (kind: string, needs: string): StepDefinition =>
  defineStep({ kind, needs: needs as StepDefinition['needs'], schema: z.strictObject({}), handler: async () => {} });

describe('scenario step registry', () => {
  it('each step kind lives in its own file, steps/<kind>.ts', () => {
    for (const kind of stepKinds) expect(existsSync(path.join(stepsDir, `${kind}.ts`)), kind).toBe(true);
  });

  it('says what each step needs, as the runner checks before a run', () => {
    const needs = Object.fromEntries(stepKinds.map((kind) => [kind, stepNeeds(kind)]));
    expect(needs).toEqual({
      register: 'bench',
      'open-session': 'bench',
      'get-session': 'bench',
      heartbeat: 'bench',
      'end-session': 'bench',
      flash: 'bench',
      'wait-job': 'bench',
      'create-node': 'relay',
      'post-item': 'relay',
      vote: 'relay',
      'expect-bulletin': 'relay',
      http: 'http',
      'device-flash': 'device',
      'wait-serial': 'device',
      'write-serial': 'device',
      'expect-exit': 'device',
      'device-reset': 'device',
      delay: 'none',
      'expect-pin': 'pins',
      'set-control': 'pins',
    });
  });

  it('refuses a kind no step file defines, instead of treating it as needing nothing', () => {
    expect(() => stepNeeds('set-pin')).toThrow(/no scenario step "set-pin".*steps\/set-pin\.ts/);
  });

  it('refuses, naming the step file, a step whose needs the runner does not know', () => {
    expect(() => indexSteps([step('read-pin', 'gpio')])).toThrow(/harness\/scenario\/steps\/read-pin\.ts: step read-pin needs "gpio"/);
  });

  it('refuses, naming the step file, a kind listed twice', () => {
    expect(() => indexSteps([step('delay', 'none'), step('delay', 'none')])).toThrow(/harness\/scenario\/steps\/delay\.ts: step delay is listed twice/);
  });
});
