import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { requireDevice, runDevice, stoppedText } from '../device-run.js';
import { ScenarioError } from '../scenario-error.js';
import { waitFields } from '../step-fields.js';

/** `expect-exit`: runs the device until the firmware exits or crashes. */
export const expectExitStep = defineStep({
  kind: 'expect-exit',
  needs: 'device',
  schema: z
    .strictObject({ code: z.number().int().optional(), crash: z.boolean().optional().describe('true: expect a crash instead of an exit'), ...waitFields })
    .describe('runs the device until the firmware exits (with code) or crashes'),
  async handler(ctx, b) {
    const state = requireDevice(ctx, 'expect-exit');
    const kind = ctx.clockOf(b.clock);
    const timeoutMs = ctx.timeoutMsOf(b.timeout);
    await runDevice(ctx, state, { kind, timeoutMs, until: () => false });
    const stop = state.stopped;
    const wanted = b.crash ? 'a crash' : `an exit${b.code === undefined ? '' : ` with code ${b.code}`}`;
    if (!stop) throw new ScenarioError('timeout', `expect-exit: the firmware still ran after ${timeoutMs} ms (${kind} clock)`, [], { expected: wanted, actual: 'still running' });
    const ok = b.crash ? stop.reason === 'crashed' : stop.reason === 'exited' && (b.code === undefined || stop.exitCode === b.code);
    if (!ok) throw new ScenarioError('failed', `expect-exit: expected ${wanted}, but ${stoppedText(state)}`, [], { expected: wanted, actual: stoppedText(state) });
  },
});
