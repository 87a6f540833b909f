import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { answerFields, boardField, numberOrVariable, text } from '../step-fields.js';

/** `flash`: submits a flash job to the bench service. */
export const flashStep = defineStep({
  kind: 'flash',
  needs: 'bench',
  usesBoard: true,
  schema: z
    .strictObject({
      token: text.optional().describe('bearer token; omit to send no Authorization header'),
      board: boardField,
      firmware: text.describe('firmware file, relative to the scenario file'),
      'uart-seconds': numberOrVariable.optional(),
      session: text.optional(),
      ...answerFields,
    })
    .describe('POST /api/v1/jobs/flash (multipart); answers the job record, state queued'),
  async handler(ctx, b) {
    const form = new FormData();
    form.set('board', ctx.board(b.board));
    const fileName = ctx.vars.substitute(b.firmware).split('/').pop() ?? 'firmware.elf';
    form.set('firmware', new Blob([ctx.readFile(b.firmware)], { type: 'application/octet-stream' }), fileName);
    if (b['uart-seconds'] !== undefined) form.set('uart_seconds', ctx.vars.substitute(String(b['uart-seconds'])));
    if (b.session !== undefined) form.set('session', ctx.vars.substitute(b.session));
    const answer = await ctx.bench.request('POST', '/api/v1/jobs/flash', { ...(b.token !== undefined ? { token: ctx.vars.substitute(b.token) } : {}), body: form });
    ctx.accept(answer, 'flash', b);
  },
});
