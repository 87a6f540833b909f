import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import type { Backend } from '../../backends/backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers, foregroundClock } from '../../core/clock.js';
import { AVR_GPIO_FOLLOW, THUMB_GPIO_FOLLOW, avrProgram, thumbProgram } from '../../test/support/sim-programs.js';
import { parseScenario } from './load-scenario.js';
import { describeFailure, runScenario } from './run-scenario.js';
import type { ScenarioTarget } from './scenario-target.js';

const boards = loadBoardCatalog();
// The firmware lives beside the scenario "file": an LED pin high, and an output following an input.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-pins-'));
writeFileSync(path.join(dir, 'pico-gpio.elf'), thumbProgram(THUMB_GPIO_FOLLOW).bytes);
writeFileSync(path.join(dir, 'uno-gpio.elf'), avrProgram(AVR_GPIO_FOLLOW).bytes);

function target(backend: Backend): ScenarioTarget {
  const fake = createClock(Date.UTC(2026, 0, 1));
  return { description: `backend ${backend.name}`, clock: clockFromFakeTimers(fake), realClock: foregroundClock, advance: async (ms) => void (await fake.tickAsync(ms)), simulatedHost: true, backend, boards };
}
const sim = () => target(new SimBackend({ clock: foregroundClock }));
const scenario = (board: string, steps: string) =>
  parseScenario(`version: 1\nname: pins\nboard: ${board}\ntimeout: 1s\nsteps:\n  - device-flash: { firmware: ${board}-gpio.elf }\n${steps}`, path.join(dir, 'pins.yaml'));

// The same scenario on both chips, by the board files' names (LED, D2/D12 on the Uno) and the MCU's.
const follow = [
  { board: 'pico', led: 'LED', input: 'GP15', output: 'gp14' },
  { board: 'uno', led: 'D13', input: 'D2', output: 'PB4' },
];

describe.each(follow)('pin steps on the simulated $board', ({ board, led, input, output }) => {
  it('expect-pin sees the firmware drive pins, and set-control drives what the firmware reads, across a reset too', async () => {
    const steps = [
      '  - delay: 1ms',
      `  - expect-pin: { name: ${led}, value: 1 }`,
      `  - expect-pin: { pin: ${output}, value: 0 }`,
      `  - set-control: { part-id: btn1, name: ${input}, value: true }`,
      '  - delay: 1ms',
      `  - expect-pin: { name: ${output}, value: 1 }`,
      '  - device-reset: {}',
      '  - delay: 1ms',
      `  - expect-pin: { name: ${output}, value: 1 }`,
      `  - set-control: { name: ${input}, value: 0 }`,
      '  - delay: 1ms',
      `  - expect-pin: { name: ${output}, value: false }`,
    ];
    const r = await runScenario(scenario(board, `${steps.join('\n')}\n`), sim());
    expect(r.status, describeFailure(r)).toBe('passed');
  });

  it('a pin at the wrong level fails the step with what it shows and who sets it', async () => {
    const r = await runScenario(scenario(board, `  - delay: 1ms\n  - expect-pin: { name: ${led}, value: 0 }\n`), sim());
    expect(r.status).toBe('failed');
    expect(r.failure?.message).toMatch(new RegExp(`expect-pin ${led}: expected 0, it is 1 \\(set by firmware\\) at \\d+ ns of device time`));
  });
});

describe('pin steps the target cannot run are refused before the first step', () => {
  it('a pin the board does not have, with the near misses', async () => {
    const r = await runScenario(scenario('uno', '  - expect-pin: { name: D14, value: 1 }\n  - set-control: { name: LEDD, value: 1 }\n'), sim());
    expect(r.status).toBe('unsupported');
    expect(r.failure?.issues).toEqual([
      expect.stringMatching(/^steps\[1\] expect-pin: uno has no pin "D14" \(did you mean .*D1.*\?\)$/),
      expect.stringMatching(/^steps\[2\] set-control: uno has no pin "LEDD" \(did you mean LED.*\?\)$/),
    ]);
    expect(r.steps.every((s) => s.status === 'not-run')).toBe(true);
  });

  it('a backend that does not model the board pins', async () => {
    const r = await runScenario(scenario('pico', '  - expect-pin: { name: LED, value: 1 }\n'), target(new MockBackend()));
    expect(r.status).toBe('unsupported');
    expect(r.failure?.issues).toEqual(['steps[1] expect-pin: backend mock does not model the pins of pico; the sim backend models RP2040 and ATmega328P pins']);
  });
});
