import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { sessionPath } from '../request-parts.js';
import { answerFields, text } from '../step-fields.js';

/** `get-session`: reads a session. */
export const getSessionStep = defineStep({
  kind: 'get-session',
  needs: 'bench',
  schema: z.strictObject({ token: text, session: text, ...answerFields }).describe('GET /api/v1/sessions/{session}'),
  async handler(ctx, b) {
    ctx.accept(await ctx.bench.request('GET', sessionPath(ctx, b.session), { token: ctx.vars.substitute(b.token) }), 'get-session', b);
  },
});
