import { defineStep } from '../define-step.js';
import { ScenarioError } from '../scenario-error.js';
import { pinBody } from '../step-fields.js';

/** `expect-pin` (wokwi-cli's name): a pin level. Refused before the run on a backend without pins. */
export const expectPinStep = defineStep({
  kind: 'expect-pin',
  needs: 'pins',
  schema: pinBody.describe('Wokwi: a pin level (name, or its alias pin). No hilbench backend models pins yet: refused before the run starts'),
  async handler() {
    // Refused before the run (run-scenario.ts `checkTarget`); reaching here means a new backend forgot to say so.
    throw new ScenarioError('unsupported', 'expect-pin: no hilbench backend models pins');
  },
});
