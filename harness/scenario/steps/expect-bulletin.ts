import { z } from 'zod';
import { defineStep } from '../define-step.js';
import { DEFAULT_POLL_MS, pollUntil } from '../poll-until.js';
import { checkAnswer } from '../scenario-context.js';
import { checkJsonRegexes } from '../step-checks.js';
import { asField, durationMs, durationSchema, text, waitFields } from '../step-fields.js';

/** `expect-bulletin`: polls a node's bulletin on an item until it matches. */
export const expectBulletinStep = defineStep({
  kind: 'expect-bulletin',
  needs: 'relay',
  schema: z
    .strictObject({
      item: text,
      node: text.describe('node id whose bulletin to read'),
      state: z.enum(['uncommitted', 'voted', 'accepted', 'confirmed', 'conflicted']).optional(),
      value: z.enum(['yes', 'no']).optional(),
      json: z.unknown().optional().describe('subset match on the bulletin'),
      poll: durationSchema.optional(),
      ...waitFields,
      as: asField,
    })
    .describe('polls GET /items/{item}/bulletin/{node} until it matches'),
  check(b, at, issues) {
    checkJsonRegexes(b.json, `${at}.json`, issues);
  },
  async handler(ctx, b) {
    const item = ctx.vars.substitute(b.item);
    const node = ctx.vars.substitute(b.node);
    const expected = ctx.vars.substituteDeep({
      ...(b.state !== undefined ? { state: b.state } : {}),
      ...(b.value !== undefined ? { value: b.value } : {}),
      ...((b.json ?? {}) as object),
    });
    let last = 'no answer yet';
    const kind = ctx.clockOf(b.clock);
    const answer = await pollUntil(
      ctx,
      { kind, timeoutMs: ctx.timeoutMsOf(b.timeout), pollMs: b.poll === undefined ? DEFAULT_POLL_MS : durationMs(b.poll), waitingFor: `bulletin of ${node} on ${item} to match ${JSON.stringify(expected)}`, lastSeen: () => last },
      async () => {
        const a = await ctx.relay.raw.bulletin(item, node);
        last = `${a.status} ${a.text.slice(0, 400)}`;
        if (a.status !== 200) return undefined;
        try {
          checkAnswer(a, 'bulletin', { json: expected });
          return a;
        } catch {
          return undefined;
        }
      },
    );
    if (b.as) ctx.vars.set(b.as, answer.json);
  },
});
