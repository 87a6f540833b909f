import { z } from 'zod';
import { finishedJobStates, isFinishedJobState } from '../../../wire/job-states.js';
import { defineStep } from '../define-step.js';
import { DEFAULT_POLL_MS, pollUntil } from '../poll-until.js';
import { checkAnswer } from '../scenario-context.js';
import { ScenarioError } from '../scenario-error.js';
import { answerFields, durationMs, durationSchema, text, waitFields } from '../step-fields.js';

/** `wait-job`: polls a flash job until it finishes. */
export const waitJobStep = defineStep({
  kind: 'wait-job',
  needs: 'bench',
  schema: z
    .strictObject({
      token: text,
      job: text,
      state: z.enum(finishedJobStates).optional().describe('the final state expected (default done)'),
      poll: durationSchema.optional().describe('poll interval (default 50ms)'),
      ...waitFields,
      ...answerFields,
    })
    .describe('polls GET /api/v1/jobs/{job} until done or failed; expectations apply to the final record'),
  async handler(ctx, b) {
    const job = ctx.vars.substitute(b.job);
    const token = ctx.vars.substitute(b.token);
    const want = b.state ?? 'done';
    let last = 'no answer yet';
    // Real time is yielded only while the job is unfinished on a backend that runs in real time.
    let realTimeWork = false;
    const kind = ctx.clockOf(b.clock);
    const final = await pollUntil(
      ctx,
      {
        kind,
        timeoutMs: ctx.timeoutMsOf(b.timeout),
        pollMs: b.poll === undefined ? DEFAULT_POLL_MS : durationMs(b.poll),
        waitingFor: `job ${job} to finish`,
        lastSeen: () => last,
        realTimeWork: () => realTimeWork,
      },
      async () => {
        const answer = await ctx.bench.request('GET', `/api/v1/jobs/${encodeURIComponent(job)}`, { token });
        checkAnswer(answer, `GET job ${job}`, undefined);
        const record = answer.json as { state?: unknown; board?: unknown; uart?: { text?: unknown } | null; failure?: unknown } | undefined;
        last = `state ${String(record?.state)}`;
        const finished = isFinishedJobState(record?.state);
        realTimeWork = !finished && ctx.target.simulatedHost && typeof record?.board === 'string' && (await ctx.benchBackendOf(record.board)) !== 'mock';
        if (typeof record?.uart?.text === 'string') {
          ctx.lastUart = record.uart.text;
          if (finished) ctx.logJobUart(job, String(record.board), record.uart.text);
          ctx.checkFailText(record.uart.text, `the UART of job ${job}`);
        }
        return finished ? answer : undefined;
      },
    );
    const record = final.json as { state: string; failure?: unknown };
    if (record.state !== want) {
      throw new ScenarioError('failed', `job ${job} ended ${record.state}, expected ${want}`, [], {
        expected: `state ${want}`,
        actual: `state ${record.state}${record.failure ? `, failure ${JSON.stringify(record.failure)}` : ''}`,
      });
    }
    ctx.accept(final, `job ${job}`, b);
  },
});
