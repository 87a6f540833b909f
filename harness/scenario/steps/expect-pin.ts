import { defineStep } from '../define-step.js';
import { requireDevice } from '../device-run.js';
import { ScenarioError } from '../scenario-error.js';
import { pinBody, pinLevel } from '../step-fields.js';

/**
 * `expect-pin` (wokwi-cli's name): the pin shows this level now (after the waits before it).
 * Pin names are checked against the board before the run (`pin-check.ts`).
 */
export const expectPinStep = defineStep({
  kind: 'expect-pin',
  needs: 'pins',
  schema: pinBody.describe('a pin shows a level now: name (the board file\'s pin name or the MCU\'s, e.g. LED, D13, GP25, PB5; or its alias pin), value 0/1 or false/true. Backends that model pins: sim'),
  async handler(ctx, b) {
    const state = requireDevice(ctx, 'expect-pin');
    const pins = state.device.pins;
    if (!pins) throw new ScenarioError('unsupported', `expect-pin: ${state.device.board.id} on this backend has no pins`);
    const want = pinLevel(b.value);
    const seen = await pins.read(b.name);
    if (seen.level !== want) {
      throw new ScenarioError('failed', `expect-pin ${b.name}: expected ${want}, it is ${seen.level} (set by ${seen.driver}) at ${state.elapsedNanos} ns of device time`);
    }
  },
});
