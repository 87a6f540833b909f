import { defineStep } from '../define-step.js';
import { requireDevice } from '../device-run.js';
import { ScenarioError } from '../scenario-error.js';
import { pinBody, pinLevel } from '../step-fields.js';

/**
 * `set-control` (wokwi-cli's name): drives a pin from outside, as a button or a jumper would;
 * the level stays (across resets too) until set again.
 */
export const setControlStep = defineStep({
  kind: 'set-control',
  needs: 'pins',
  schema: pinBody.describe('drives a pin from outside (a button, a jumper): name (as for expect-pin, or its alias pin), value 0/1 or false/true; it stays until set again. Backends that model pins: sim'),
  async handler(ctx, b) {
    const state = requireDevice(ctx, 'set-control');
    const pins = state.device.pins;
    if (!pins) throw new ScenarioError('unsupported', `set-control: ${state.device.board.id} on this backend has no pins`);
    await pins.drive(b.name, pinLevel(b.value));
  },
});
