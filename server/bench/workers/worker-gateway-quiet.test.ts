import { describe, expect, it } from 'vitest';
import { jobRecord, T0 } from '../../../test/contract/bench-store-contract.js';
import { endedByDeadline as done, settle, setUpWorkerGateway } from '../../../test/support/worker-gateway-set-up.js';
import { QUIET_MARK_MAX_AGE_MS } from './quiet-boards.js';

// The quiet marks' edges (decision 0980): what comes between the store's answer and its handling
// here, and tasks other than queued jobs. No poll: a claim or fetch that skipped its look would wait for good.

async function setUp() {
  const set = await setUpWorkerGateway();
  const g = set.gateway();
  return { ...set, g, link: g.linkFor('w1', { claimMs: null }) };
}

type GatewaySetUp = Awaited<ReturnType<typeof setUp>>;

/**
 * Job 1 claimed and ended on pico; the claim after that end must look at the store at once (one
 * look, no waiting) and find `next`, made claimable around the end: while the job ran
 * (`whileRunning`), between the end's commit and its answer here (`whileEndIsWritten`, the store's
 * `finishJob` wrapped), or after the end (`afterEnd`).
 */
interface ClaimAfterEnd {
  whileRunning?(set: GatewaySetUp): Promise<void>;
  whileEndIsWritten?(set: GatewaySetUp): Promise<void>;
  afterEnd?(set: GatewaySetUp): Promise<void>;
  next: Record<string, unknown>;
}

const queueJob2 = ({ store }: GatewaySetUp) => store.createJob(jobRecord({ jobId: 'job_2', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 + 1 }).then(() => undefined);

const claimsAfterEnd: Array<[string, ClaimAfterEnd]> = [
  [
    'hands out at once a health check requested on the board while its job ran (a claim hands out checks too)',
    {
      whileRunning: async ({ store, g }) => {
        await store.healthChecks.request({ checkId: 'hc_1', board: 'pico', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
        g.healthChecks.requested('pico');
      },
      next: { kind: 'health-check' },
    },
  ],
  [
    'looks at once on the next claim when a job was queued here while the end was written',
    {
      // Committed after the end's look at the queue, before its answer is handled here.
      whileEndIsWritten: async (set) => {
        await queueJob2(set);
        set.g.jobQueued('pico');
      },
      next: { jobId: 'job_2' },
    },
  ],
  [
    'looks first on a claim that comes long after the end that marked its board (its worker was away: others may have queued meanwhile)',
    {
      afterEnd: async (set) => {
        set.fake.tick(QUIET_MARK_MAX_AGE_MS + 1);
        // Queued through another replica while the worker was away: nothing here hears it.
        await queueJob2(set);
      },
      next: { jobId: 'job_2' },
    },
  ],
];

describe('WorkerGateway quiet marks (decision 0980)', () => {
  it.each(claimsAfterEnd)('%s', async (_name, edge) => {
    const set = await setUp();
    const { store, g, link, claims } = set;
    await store.createJob(jobRecord({ jobId: 'job_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    await edge.whileRunning?.(set);
    const { whileEndIsWritten } = edge;
    if (whileEndIsWritten) {
      const finishJob = store.finishJob.bind(store);
      store.finishJob = async (...args: Parameters<typeof finishJob>) => {
        const ended = await finishJob(...args);
        await whileEndIsWritten(set);
        return ended;
      };
    }
    await link.finish('job_1', done);
    await edge.afterEnd?.(set);
    const before = claims();
    const next = link.claim(['pico'], new AbortController().signal);
    await settle();
    expect(claims() - before).toBe(1);
    expect(await next).toMatchObject(edge.next);
    await g.close();
  });

  it("looks at once on a running job's first input fetch when input was queued here while running was written", async () => {
    const { store, g, link } = await setUp();
    await store.createJob(jobRecord({ jobId: 'job_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    const markJobRunning = store.markJobRunning.bind(store);
    store.markJobRunning = async (...args: Parameters<typeof markJobRunning>) => {
      const status = await markJobRunning(...args);
      // Queued after running's UPDATE read the job, before its answer is handled here.
      await store.serialInput.enqueue('job_1', new TextEncoder().encode('hi'), { nowMs: T0, maxPendingBytes: 64 });
      g.inputQueued('job_1');
      return status;
    };
    expect(await link.running('job_1')).toEqual({ stop: null });
    const fetched = link.input('job_1', 0, new AbortController().signal);
    let answered = false;
    void fetched.then(() => (answered = true));
    await settle();
    expect(answered).toBe(true);
    expect((await fetched).inputs.map((i) => i.seq)).toEqual([1]);
    await g.close();
  });
});
