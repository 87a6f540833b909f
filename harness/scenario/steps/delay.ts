import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { runDevice } from '../device-run.js';
import { clockSchema, durationMs, durationSchema } from '../step-fields.js';

/** `delay` (wokwi-cli's name): lets time pass for everything. */
export const delayStep = defineStep({
  kind: 'delay',
  needs: 'none',
  schema: z
    .union([durationSchema, z.strictObject({ duration: durationSchema, clock: clockSchema.optional() })])
    .describe('lets time pass: advances the simulated clock (or sleeps in wall time) and runs an open device as long'),
  async handler(ctx, b) {
    const ms = durationMs(typeof b === 'object' ? b.duration : b);
    const kind = ctx.clockOf(typeof b === 'object' ? b.clock : undefined);
    const state = ctx.device;
    // A delay is time for everything: the open device runs as long, and the host clock moves.
    if (state && !state.stopped) await runDevice(ctx, state, { kind: 'simulated', timeoutMs: ms, until: () => false });
    if (!(state && state.device.timeBase === 'wall' && kind === 'wall')) await ctx.pass(ms, kind);
  },
});
