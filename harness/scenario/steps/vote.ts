import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { ScenarioError } from '../scenario-error.js';
import { answerFields, text, varName } from '../step-fields.js';

/** `vote`: a signed vote statement of a node made with create-node. */
export const voteStep = defineStep({
  kind: 'vote',
  needs: 'relay',
  schema: z
    .strictObject({
      node: varName.describe('the voter, made by create-node'),
      item: text,
      value: z.enum(['yes', 'no']),
      phase: z.enum(['vote', 'accept', 'confirm']).optional().describe('default vote'),
      slice: z
        .strictObject({ t: z.number().int().positive().optional().describe('threshold (default 67 %)'), v: z.array(text).min(1).describe('validator node ids') })
        .describe("the voter's slice, signed into the vote"),
      ...answerFields,
    })
    .describe('signs an x.vote/1 statement with the node key and posts it to /items/{item}/vote'),
  async handler(ctx, b) {
    const node = ctx.nodes.get(b.node);
    if (!node) throw new ScenarioError('failed', `vote: no node ${b.node} (make it with create-node)`);
    const answer = await ctx.relay.raw.vote(node, {
      item: ctx.vars.substitute(b.item),
      value: b.value,
      phase: b.phase ?? 'vote',
      slice: { ...(b.slice.t !== undefined ? { t: b.slice.t } : {}), v: b.slice.v.map((v) => ctx.vars.substitute(v)) },
    });
    ctx.accept(answer, `vote by ${b.node}`, b);
  },
});
