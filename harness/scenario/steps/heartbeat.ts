import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { sessionPath } from '../request-parts.js';
import { answerFields, text } from '../step-fields.js';

/** `heartbeat`: keeps a session alive. */
export const heartbeatStep = defineStep({
  kind: 'heartbeat',
  needs: 'bench',
  schema: z.strictObject({ token: text, session: text, ...answerFields }).describe('POST /api/v1/sessions/{session}/heartbeat'),
  async handler(ctx, b) {
    ctx.accept(await ctx.bench.request('POST', sessionPath(ctx, b.session, '/heartbeat'), { token: ctx.vars.substitute(b.token) }), 'heartbeat', b);
  },
});
