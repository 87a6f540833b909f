import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { checkAnswer } from '../scenario-context.js';
import { expectSchema, requestTimeout, text, varName } from '../step-fields.js';

/** `create-node`: a relay node with its own Ed25519 key (docs/relay-api.md). */
export const createNodeStep = defineStep({
  kind: 'create-node',
  needs: 'relay',
  schema: z
    .strictObject({ as: varName.describe('${as.node_id} and ${as.authorization} afterwards'), name: text.optional(), expect: expectSchema.optional(), timeout: requestTimeout })
    .describe('makes an Ed25519 node key and registers it (POST /register, a signed x.register/1 document)'),
  async handler(ctx, b) {
    const { node, answer } = await ctx.relay.raw.register(b.name === undefined ? {} : { name: ctx.vars.substitute(b.name) });
    checkAnswer(answer, 'create-node (POST /register)', b.expect === undefined ? undefined : ctx.vars.substituteDeep(b.expect));
    if (!node) return;
    ctx.nodes.set(b.as, node);
    ctx.vars.set(b.as, { node_id: node.nodeId, authorization: node.authorization, ...(answer.json as object) });
  },
});
