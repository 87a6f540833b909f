import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { requireDevice } from '../device-run.js';

/** `device-reset`: the core back in reset; the next wait runs the firmware from the start. */
export const deviceResetStep = defineStep({
  kind: 'device-reset',
  needs: 'device',
  schema: z.strictObject({}).describe('puts the core back in reset; the next wait runs the firmware from the start'),
  async handler(ctx) {
    const state = requireDevice(ctx, 'device-reset');
    await state.device.reset();
    state.elapsedNanos = 0;
    state.stopped = undefined;
    state.consumed = state.uartText.length;
  },
});
