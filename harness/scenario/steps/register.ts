import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { formBody } from '../request-parts.js';
import { answerFields, text } from '../step-fields.js';

/** `register`: a new agent (bench service, docs/bench-api.md). */
export const registerStep = defineStep({
  kind: 'register',
  needs: 'bench',
  schema: z.strictObject({ label: text.optional(), ...answerFields }).describe('POST /api/v1/agents/register; the answer has agent_id and token'),
  async handler(ctx, b) {
    const answer = await ctx.bench.request('POST', '/api/v1/agents/register', { body: formBody({ label: b.label === undefined ? undefined : ctx.vars.substitute(b.label) }) });
    ctx.accept(answer, 'register', b);
  },
});
