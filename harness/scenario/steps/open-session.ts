import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { formBody } from '../request-parts.js';
import { answerFields, boardField, numberOrVariable, text } from '../step-fields.js';

/** `open-session`: a session lease on a board. */
export const openSessionStep = defineStep({
  kind: 'open-session',
  needs: 'bench',
  usesBoard: true,
  schema: z.strictObject({ token: text, board: boardField, 'idle-seconds': numberOrVariable.optional(), ...answerFields }).describe('POST /api/v1/sessions'),
  async handler(ctx, b) {
    const form = formBody({ board: ctx.board(b.board), idle_seconds: b['idle-seconds'] === undefined ? undefined : ctx.vars.substitute(String(b['idle-seconds'])) });
    const answer = await ctx.bench.request('POST', '/api/v1/sessions', { token: ctx.vars.substitute(b.token), body: form });
    ctx.accept(answer, 'open-session', b);
  },
});
