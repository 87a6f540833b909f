import type { JobTicket } from '../../../harness/worker/worker-link.js';
import { describe, expect, it } from 'vitest';
import { jobRecord, sessionRecord, T0 } from '../../../test/contract/bench-store-contract.js';
import type { LiveUartChunk } from '../domain/job-live.js';
import { endedByDeadline, settle, setUpWorkerGateway as setUp } from '../../../test/support/worker-gateway-set-up.js';
import { UART_SAVE_INTERVAL_MS } from './uart-record.js';
import { defaultBenchLimits } from '../domain/bench-limits.js';

const bytes = (text: string) => new TextEncoder().encode(text);
const report = (offset: number, ...texts: string[]) => ({
  offset,
  chunks: texts.map((t, i) => ({ atNanos: i, bytes: bytes(t) })),
  timeBase: 'simulated' as const,
  droppedUartBytes: 0,
});

describe('WorkerGateway', () => {
  it("ends an in-process worker's claim empty after its wait (on the injected clock), so the worker asks again for the boards that freed meanwhile", async () => {
    const { fake, gateway } = await setUp();
    const g = gateway();
    const settled = (p: Promise<unknown>) => Promise.race([p.then(() => 'settled'), new Promise((r) => setImmediate(() => setImmediate(() => r('waiting'))))]);
    const bounded = g.linkFor('w1', { claimMs: null, claimWaitMs: 20_000 }).claim(['pico'], new AbortController().signal);
    const unbounded = g.linkFor('w2', { claimMs: null }).claim(['pico'], new AbortController().signal);
    await fake.tickAsync(19_999);
    expect(await settled(bounded)).toBe('waiting');
    await fake.tickAsync(1);
    expect(await bounded).toBeUndefined();
    await fake.tickAsync(60_000);
    expect(await settled(unbounded), 'a claim without a bound waits').toBe('waiting');
    await g.close();
  });

  it('answers a waiting claim empty when it closes, and asks the store nothing more (it closes next)', async () => {
    const { gateway, claims } = await setUp();
    const g = gateway();
    const waiting = g.linkFor('w1', { claimMs: null }).claim(['pico'], new AbortController().signal);
    await new Promise((resolve) => setImmediate(resolve));
    const beforeClose = claims();
    await g.close();
    expect(await waiting).toBeUndefined();
    expect(claims() - beforeClose).toBe(0);
  });

  it('claims on the instances a worker reported through it, or that its request was authenticated with, without reading its row (decision 0860)', async () => {
    const { store, gateway } = await setUp();
    const g = gateway();
    // The store knows no such worker: its instances come from what the gateway was told.
    let rowsRead = 0;
    const get = store.workers.get.bind(store.workers);
    store.workers.get = async (workerId: string) => {
      rowsRead += 1;
      return get(workerId);
    };
    await store.createJob(jobRecord({ jobId: 'job_2', instance: 'pico.2@w1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    const report = { board: 'pico', backend: 'mock', available: true, reason: null, poolSize: 2 };
    g.reported('w1', [report]);
    expect(await g.linkFor('w1', { claimMs: null }).claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_2', instance: 'pico.2@w1' });
    await store.createJob(jobRecord({ jobId: 'job_3', instance: 'pico.1@w2', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await g.linkFor('w2', { claimMs: 30_000, reports: [report] }).claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_3', instance: 'pico.1@w2' });
    expect(rowsRead).toBe(0);
  });

  it('wakes a waiting claim only for a job on one of its boards', async () => {
    const { store, gateway } = await setUp();
    const g = gateway(60_000);
    const waiting = g.linkFor('w1', { claimMs: null }).claim(['pico'], new AbortController().signal);
    const stillWaiting = () => Promise.race([waiting, new Promise((r) => setImmediate(() => setImmediate(() => r('still waiting'))))]);
    await store.createJob(jobRecord({ jobId: 'job_uno', board: 'uno' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    g.jobQueued('uno');
    expect(await stillWaiting()).toBe('still waiting');
    await store.createJob(jobRecord({ jobId: 'job_pico', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 });
    g.jobQueued('pico');
    expect(await waiting).toMatchObject({ jobId: 'job_pico' });
  });

  it('hands a claim the job queued through it at once, and one queued through another replica on its next look', async () => {
    const { fake, store, gateway } = await setUp();
    const here = gateway(2_000);
    const link = here.linkFor('w1', { claimMs: null });
    const first = link.claim(['pico', 'uno'], new AbortController().signal);
    await store.createJob(jobRecord({ jobId: 'job_here', board: 'uno' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    here.jobQueued('uno');
    expect(await first).toMatchObject({ jobId: 'job_here', board: 'uno', maxUartBytes: defaultBenchLimits.maxUartBytesPerJob });

    const second = link.claim(['pico'], new AbortController().signal);
    // Queued through another replica: nobody tells this gateway; it looks again on its clock.
    await store.createJob(jobRecord({ jobId: 'job_there' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await fake.tickAsync(2_000);
    expect(await second).toMatchObject({ jobId: 'job_there' });

    const aborted = new AbortController();
    const third = link.claim(['pico'], aborted.signal);
    aborted.abort();
    expect(await third).toBeUndefined();
  });

  it("waits before the first look of the next claim on a board whose job ended here with nothing waiting; looks at once when something was (decision 0980)", async () => {
    const { fake, store, gateway, claims } = await setUp();
    const g = gateway(2_000);
    const link = g.linkFor('w1', { claimMs: null });
    const done = endedByDeadline;
    const runOne = async (jobId: string, createdAtMs: number) => {
      await store.createJob(jobRecord({ jobId, createdAtMs }), { maxQueuedPerBoard: 4, nowMs: createdAtMs });
      g.jobQueued('pico');
      expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId });
      await link.finish(jobId, done);
    };
    await runOne('job_1', T0);
    // Nothing waited on pico as job_1 ended: the next claim waits, then looks when a job is queued here.
    const before = claims();
    const next = link.claim(['pico'], new AbortController().signal);
    await settle();
    expect(claims() - before).toBe(0);
    await store.createJob(jobRecord({ jobId: 'job_2', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 + 1 });
    g.jobQueued('pico');
    expect(await next).toMatchObject({ jobId: 'job_2' });
    expect(claims() - before).toBe(1);
    await link.finish('job_2', done);
    // Queued through another replica after that end: taken at the poll.
    const polled = link.claim(['pico'], new AbortController().signal);
    await store.createJob(jobRecord({ jobId: 'job_3', createdAtMs: T0 + 2 }), { maxQueuedPerBoard: 4, nowMs: T0 + 2 });
    await settle();
    await fake.tickAsync(2_000);
    expect(await polled).toMatchObject({ jobId: 'job_3' });
    await link.finish('job_3', done);
    // A session's next job waited on pico as its first ended: the next claim looks at once.
    await store.openSession(sessionRecord({ expiresAtMs: T0 + 90_000 }));
    for (const [jobId, at] of [
      ['job_s1', T0 + 3],
      ['job_s2', T0 + 4],
    ] as const) {
      await store.createJob(jobRecord({ jobId, sessionId: 'ses_1', createdAtMs: at }), { maxQueuedPerBoard: 4, nowMs: at });
    }
    g.jobQueued('pico');
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_s1' });
    await link.finish('job_s1', done);
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_s2' });
    await g.close();
  });

  it('passes UART on once, with byte offsets, even when a worker sends a range again; saves it on the clock', async () => {
    const { fake, store, live, gateway } = await setUp();
    const g = gateway();
    const link = g.linkFor('w1', { claimMs: null });
    await store.createJob(jobRecord(), { maxQueuedPerBoard: 4, nowMs: T0 });
    await link.claim(['pico'], new AbortController().signal);
    await link.running('job_1');
    const seen: LiveUartChunk[] = [];
    live.subscribe('job_1', (e) => e.kind === 'uart' && seen.push(e.chunk));
    await link.uart('job_1', report(0, 'boot\n', 'tick 1\n'));
    await link.uart('job_1', report(5, 'tick 1\n', 'tick 2\n'));
    await link.uart('job_1', report(17, '2\ntick 3\n'));
    expect(seen.map((c) => [c.offset, new TextDecoder().decode(c.bytes)])).toEqual([
      [0, 'boot\n'],
      [5, 'tick 1\n'],
      [12, 'tick 2\n'],
      [19, 'tick 3\n'],
    ]);
    expect((await store.getJob('job_1'))!.uart).toBeNull();
    await fake.tickAsync(UART_SAVE_INTERVAL_MS);
    await g.close();
    expect(new TextDecoder().decode((await store.getJob('job_1'))!.uart!.bytes)).toBe('boot\ntick 1\ntick 2\ntick 3\n');
  });

  it('records an outcome only from the worker holding the job; another replica takes up the UART from the store', async () => {
    const { fake, store, gateway } = await setUp();
    const a = gateway();
    await store.createJob(jobRecord(), { maxQueuedPerBoard: 4, nowMs: T0 });
    const ticket = await a.linkFor('w1', { claimMs: 30_000 }).claim(['pico'], new AbortController().signal);
    await a.linkFor('w1', { claimMs: 30_000 }).uart((ticket as JobTicket).jobId, report(0, 'first half\n'));
    await fake.tickAsync(UART_SAVE_INTERVAL_MS);
    // The same worker's next report reaches another replica, which continues from what is stored.
    const b = gateway();
    await b.linkFor('w1', { claimMs: 30_000 }).uart('job_1', report(11, 'second half\n'));
    await b.linkFor('w2', { claimMs: 30_000 }).finish('job_1', { state: 'failed', failure: { kind: 'internal', message: 'not mine' }, uart: null });
    expect((await store.getJob('job_1'))!.state).toBe('flashing');
    await b.linkFor('w1', { claimMs: 30_000 }).finish('job_1', {
      state: 'done',
      uart: { timeBase: 'simulated', droppedUartBytes: 0, uart: [{ atNanos: 0, bytes: bytes('first half\nsecond half\n') }] },
      stop: { reason: 'elapsed', elapsedNanos: 5 },
      flashMs: 1,
      runMs: 2,
    });
    const job = await store.getJob('job_1');
    expect(job).toMatchObject({ state: 'done', workerId: 'w1' });
    expect(new TextDecoder().decode(job!.uart!.bytes)).toBe('first half\nsecond half\n');
  });

  it('fails a claimed job whose debug arming cannot be read, with the reason, and hands out the next: a debug job never runs as an ordinary one, nor sits in flashing', async () => {
    const { store, gateway } = await setUp();
    const g = gateway();
    const link = g.linkFor('w1', { claimMs: null });
    await store.openSession(sessionRecord());
    await store.createJob(jobRecord({ jobId: 'job_1', sessionId: 'ses_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.createJob(jobRecord({ jobId: 'job_2', sessionId: 'ses_1', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 });
    // The database goes away between the claim's transaction and the arming's, once.
    const armings = store.debugArmings;
    const claimArming = armings.claim.bind(armings);
    let outages = 1;
    armings.claim = async (...args: Parameters<typeof claimArming>) => {
      if (outages-- > 0) throw new Error('terminating connection due to administrator command');
      return claimArming(...args);
    };
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_2' });
    expect(await store.getJob('job_1')).toMatchObject({
      state: 'failed',
      failure: { kind: 'internal', message: 'the bench could not read whether job job_1 is a debug job (terminating connection due to administrator command), so it was not run; submit it again' },
    });
  });

  // Two instances of pico on w1: the health of an instance of several is the server's to count.
  const poolOfTwo = [{ board: 'pico', backend: 'sim', available: true, reason: null, poolSize: 2 }];

  it("counts an ordinary job's timeout against its instance, and a debug job's not (the store knows it ran under a debugger)", async () => {
    const { store, gateway, healthCounted } = await setUp();
    const g = gateway();
    const link = g.linkFor('w1', { claimMs: 30_000, reports: poolOfTwo });
    await store.openSession(sessionRecord({ instance: 'pico.2@w1' }));
    await store.createJob(jobRecord({ jobId: 'job_debug', sessionId: 'ses_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await g.debug.arm('ag_1', 'ses_1', {});
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_debug', debug: { idleTimeoutMs: 300_000 } });
    await link.finish('job_debug', { state: 'failed', failure: { kind: 'timeout', message: 'no debugger connected for 300 s' }, uart: null });
    await store.createJob(jobRecord({ jobId: 'job_plain', sessionId: 'ses_1', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 });
    // As the service tells the gateway of every job it queues (the claim after an end may wait for it, decision 0980).
    g.jobQueued('pico');
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_plain' });
    await link.finish('job_plain', { state: 'failed', failure: { kind: 'timeout', message: 'deadline' }, uart: null });
    expect(healthCounted).toEqual([
      { jobId: 'job_debug', failures: undefined },
      { jobId: 'job_plain', failures: 1 },
    ]);
    expect(await store.boardHealth.get('pico.2@w1')).toMatchObject({ consecutiveFailures: 1, lastFailure: 'timeout: deadline' });
    expect(await store.debugArmings.job('job_debug'), "the debug job's row goes with its end").toBeUndefined();
  });

  it("counts a job's end towards its instance's health once, though its worker sends the outcome again (the first answer lost on the way)", async () => {
    const { store, live, gateway, healthCounted } = await setUp();
    const g = gateway();
    const link = g.linkFor('w1', { claimMs: 30_000, reports: poolOfTwo });
    await store.createJob(jobRecord({ instance: 'pico.2@w1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    const outcome = { state: 'failed' as const, failure: { kind: 'timeout' as const, message: 'deadline' }, uart: null };
    await link.finish('job_1', outcome);
    const ends: string[] = [];
    live.subscribe('job_1', (event) => ends.push(event.kind === 'state' ? event.state : event.kind));
    await link.finish('job_1', outcome);
    expect(healthCounted).toEqual([
      { jobId: 'job_1', failures: 1 },
      { jobId: 'job_1', failures: undefined },
    ]);
    expect((await store.boardHealth.get('pico.2@w1')).consecutiveFailures).toBe(1);
    // Its readers still hear the end again: harmless, and a first try whose answer was lost may not have told them.
    expect(ends).toEqual(['failed']);
  });

  it("carries a job's end only while its outcome is recorded through it, not while the job merely runs through it (its outcome may reach another replica)", async () => {
    const { store, gateway } = await setUp();
    const g = gateway();
    const link = g.linkFor('w1', { claimMs: 30_000 });
    await store.createJob(jobRecord(), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    expect(g.carries('job_1'), 'a job running here, whose end may be recorded through another replica').toBe(false);
    const finishJob = store.finishJob.bind(store);
    let carriedAsItEnded: boolean | undefined;
    store.finishJob = async (...args: Parameters<typeof finishJob>) => {
      carriedAsItEnded = g.carries('job_1');
      return finishJob(...args);
    };
    await link.finish('job_1', { state: 'failed', failure: { kind: 'timeout', message: 'deadline' }, uart: null });
    expect(carriedAsItEnded, 'the end recorded here: its live event brings the record').toBe(true);
    expect(g.carries('job_1')).toBe(false);
  });

  it("waits before the first input look of a job never sent input (no statement), wakes for input queued through it, sees another replica's at the poll, and looks at once for a job sent input before it ran", async () => {
    const { fake, store, gateway } = await setUp();
    const g = gateway(2_000);
    const link = g.linkFor('w1', { claimMs: 30_000 });
    let takes = 0;
    const take = store.serialInput.take.bind(store.serialInput);
    store.serialInput.take = async (...args: Parameters<typeof take>) => {
      takes += 1;
      return take(...args);
    };
    const enqueue = (jobId: string, text: string) => store.serialInput.enqueue(jobId, bytes(text), { nowMs: T0, maxPendingBytes: 64 });
    for (const [jobId, board] of [
      ['job_1', 'pico'],
      ['job_2', 'uno'],
      ['job_3', 'stm32f4-discovery'],
    ] as const) {
      await store.createJob(jobRecord({ jobId, board }), { maxQueuedPerBoard: 4, nowMs: T0 });
      expect(await link.claim([board], new AbortController().signal)).toMatchObject({ jobId });
    }
    // Sent input while it flashed: the store says so as it runs, and the first fetch looks at once.
    await enqueue('job_3', 'early');
    for (const jobId of ['job_1', 'job_2', 'job_3']) expect(await link.running(jobId)).toEqual({ stop: null });
    expect((await link.input('job_3', 0, new AbortController().signal)).inputs.map((i) => i.seq)).toEqual([1]);
    expect(takes).toBe(1);
    // Never sent input: no look until something says there may be some.
    const here = link.input('job_1', 0, new AbortController().signal);
    const elsewhere = link.input('job_2', 0, new AbortController().signal);
    await settle();
    expect(takes).toBe(1);
    await enqueue('job_1', 'here');
    g.inputQueued('job_1');
    expect((await here).inputs.map((i) => i.seq)).toEqual([1]);
    // Queued through another replica (nothing here hears it): taken at the poll.
    await enqueue('job_2', 'there');
    await settle();
    expect(takes).toBe(2);
    await fake.tickAsync(2_000);
    expect((await elsewhere).inputs.map((i) => i.seq)).toEqual([1]);
    await g.close();
  });
});
