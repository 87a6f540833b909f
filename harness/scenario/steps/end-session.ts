import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { sessionPath } from '../request-parts.js';
import { answerFields, text } from '../step-fields.js';

/** `end-session`: gives a session's board back. */
export const endSessionStep = defineStep({
  kind: 'end-session',
  needs: 'bench',
  schema: z.strictObject({ token: text, session: text, ...answerFields }).describe('POST /api/v1/sessions/{session}/end'),
  async handler(ctx, b) {
    ctx.accept(await ctx.bench.request('POST', sessionPath(ctx, b.session, '/end'), { token: ctx.vars.substitute(b.token) }), 'end-session', b);
  },
});
