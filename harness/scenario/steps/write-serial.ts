import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { requireDevice } from '../device-run.js';
import { byteList, text } from '../step-fields.js';

/** `write-serial` (wokwi-cli's name): sends text or bytes to the firmware UART. */
export const writeSerialStep = defineStep({
  kind: 'write-serial',
  needs: 'device',
  schema: z
    .union([text, byteList, z.strictObject({ text: text.optional(), bytes: byteList.optional() })])
    // Wokwi's own form, `write-serial: [104, 105]`, is bytes.
    .transform((b) => (Array.isArray(b) ? { bytes: b } : b))
    .describe('sends text (or bytes: a list of 0-255, or {bytes}) to the firmware UART'),
  check(b, at, issues) {
    if (typeof b === 'object' && (b.text === undefined) === (b.bytes === undefined)) issues.push(`${at}: give text or bytes (one of them)`);
  },
  async handler(ctx, b) {
    const state = requireDevice(ctx, 'write-serial');
    const bytes = typeof b === 'string' ? new TextEncoder().encode(ctx.vars.substitute(b)) : b.text !== undefined ? new TextEncoder().encode(ctx.vars.substitute(b.text)) : Uint8Array.from(b.bytes ?? []);
    await state.device.writeUart(bytes);
  },
});
