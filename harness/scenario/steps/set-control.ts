import { defineStep } from '../define-step.js';
import { ScenarioError } from '../scenario-error.js';
import { pinBody } from '../step-fields.js';

/** `set-control` (wokwi-cli's name): drives a control. Refused before the run on a backend without pins. */
export const setControlStep = defineStep({
  kind: 'set-control',
  needs: 'pins',
  schema: pinBody.describe('Wokwi: drive a control (name, or its alias pin). No hilbench backend models pins yet: refused before the run starts'),
  async handler() {
    throw new ScenarioError('unsupported', 'set-control: no hilbench backend models pins');
  },
});
