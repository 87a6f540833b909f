import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { findText, requireDevice, runDevice, stoppedText } from '../device-run.js';
import { ScenarioError } from '../scenario-error.js';
import { checkTextMatch } from '../step-checks.js';
import { textMatchFields, waitFields } from '../step-fields.js';

/** `wait-serial` (wokwi-cli's name): runs the device until its UART shows a text. */
export const waitSerialStep = defineStep({
  kind: 'wait-serial',
  needs: 'device',
  schema: z
    .union([z.string().min(1), z.strictObject({ ...textMatchFields, ...waitFields })])
    // Wokwi's own form, `wait-serial: 'tick 1'`, is a text to find.
    .transform((b) => (typeof b === 'string' ? { text: b } : b))
    .describe('runs the device until its UART output (after what earlier waits consumed) matches; a bare text is {text}'),
  check(b, at, issues) {
    checkTextMatch(b, at, issues, { required: true });
  },
  async handler(ctx, b) {
    const state = requireDevice(ctx, 'wait-serial');
    const body = { text: b.text === undefined ? undefined : ctx.vars.substitute(b.text), regex: b.regex === undefined ? undefined : ctx.vars.substitute(b.regex) };
    const wanted = body.text !== undefined ? JSON.stringify(body.text) : `/${body.regex}/`;
    const kind = ctx.clockOf(b.clock);
    const timeoutMs = ctx.timeoutMsOf(b.timeout);
    const seen = () => JSON.stringify(state.uartText.slice(state.consumed).slice(-400));
    if (b.not) {
      // Run the whole timeout; the text must not show up at any point in it.
      await runDevice(ctx, state, { kind, timeoutMs, until: () => findText(state, body) !== undefined });
      const found = findText(state, body);
      if (found) throw new ScenarioError('failed', `wait-serial: ${wanted} appeared, and must not`, [], { expected: `no ${wanted} within ${timeoutMs} ms`, actual: seen() });
      return;
    }
    await runDevice(ctx, state, { kind, timeoutMs, until: () => findText(state, body) !== undefined });
    const found = findText(state, body);
    if (!found) {
      const stopped = stoppedText(state);
      throw new ScenarioError(stopped ? 'failed' : 'timeout', stopped ? `wait-serial: ${stopped} before ${wanted} appeared` : `wait-serial: timed out after ${timeoutMs} ms (${kind} clock) waiting for ${wanted}`, [], {
        expected: wanted,
        actual: seen(),
      });
    }
    // Consume up to the end of the match: two expected lines in one chunk are two separate waits.
    state.consumed = found.end;
  },
});
