import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { ScenarioError } from '../scenario-error.js';
import { answerFields, text, varName } from '../step-fields.js';

/** `post-item`: a claim posted by a node made with create-node. */
export const postItemStep = defineStep({
  kind: 'post-item',
  needs: 'relay',
  schema: z
    .strictObject({ node: varName.describe('a node made by create-node'), kind: text, title: text, body: text.optional(), ...answerFields })
    .describe('POST /items with a claim; the answer has id'),
  async handler(ctx, b) {
    const node = ctx.nodes.get(b.node);
    if (!node) throw new ScenarioError('failed', `post-item: no node ${b.node} (make it with create-node; made so far: ${[...ctx.nodes.keys()].join(', ') || 'none'})`);
    const answer = await ctx.relay.raw.postClaim(node, { kind: ctx.vars.substitute(b.kind), title: ctx.vars.substitute(b.title), body: ctx.vars.substitute(b.body ?? '') });
    ctx.accept(answer, 'post-item', b);
  },
});
