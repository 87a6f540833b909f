import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchStore, JobRecord } from '../../server/storage/bench/bench-store.js';
import { type PostgresBenchStores, postgresBenchStores } from '../support/postgres-bench-stores.js';
import { done, jobRecord, sessionRecord, T0 } from './bench-store-contract.js';

/**
 * Several `PostgresBenchStore`s (as several replicas open them) writing one database at once,
 * with no global lock (decision 0515): the database alone must keep one lease per board, the
 * queue limit, FIFO per board, one claim per job and one expiry per session. Each case starts
 * every racer in the same tick (`Promise.all`), so the stores' transactions overlap on the server.
 */

const STORES = 3;
const AGENTS = 6;
const BOARDS = ['pico', 'uno', 'microbit'];

let replicas: PostgresBenchStores | undefined;
let stores: BenchStore[];
const storeFor = (k: number) => stores[k % stores.length]!;
let runNumber = 0;

beforeAll(async () => {
  replicas = await postgresBenchStores(STORES, { poolSize: 4 });
  stores = replicas.stores;
  for (let a = 0; a < AGENTS; a++) await stores[0]!.insertAgent({ agentId: `ag_${a}`, label: `agent ${a}`, tokenSha256: String(a).repeat(64), createdAtMs: T0 });
});

afterAll(async () => {
  await replicas?.close();
});

/** A fresh prefix for ids and a fresh time window per case, as the cases share one database. */
function freshRun(): { id: (name: string) => string; board: (name: string) => string; t0: number } {
  const run = ++runNumber;
  return { id: (name) => `r${run}_${name}`, board: (name) => `${name}-r${run}`, t0: T0 + run * 10_000_000 };
}

describe('PostgreSQL stores racing on one database', () => {
  it('gives a board to exactly one of many sessions and lease-taking jobs opened at once, round after round', async () => {
    const { id, board, t0 } = freshRun();
    for (let round = 0; round < 6; round++) {
      const pico = board(`pico${round}`);
      const answers = await Promise.all(
        Array.from({ length: AGENTS }, (_, a) =>
          a % 2 === 0
            ? storeFor(a).openSession(sessionRecord({ sessionId: id(`s${round}_${a}`), agentId: `ag_${a}`, board: pico, createdAtMs: t0, expiresAtMs: t0 + 90_000 }))
            : storeFor(a).createJob(jobRecord({ jobId: id(`j${round}_${a}`), agentId: `ag_${a}`, board: pico, createdAtMs: t0 }), { maxQueuedPerBoard: 8, nowMs: t0 }),
        ),
      );
      const winners = answers.filter((a) => a.kind === 'opened' || a.kind === 'created');
      expect(winners).toHaveLength(1);
      expect(answers.filter((a) => a.kind === 'board-leased')).toHaveLength(AGENTS - 1);
      const leases = (await storeFor(round).listLeases(t0)).filter((l) => l.board === pico);
      expect(leases).toHaveLength(1);
    }
  });

  it('keeps the queue limit of a board when many jobs are submitted into one session at once', async () => {
    const { id, board, t0 } = freshRun();
    const pico = board('pico');
    const session = sessionRecord({ sessionId: id('s'), agentId: 'ag_0', board: pico, createdAtMs: t0, expiresAtMs: t0 + 90_000 });
    expect((await stores[0]!.openSession(session)).kind).toBe('opened');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, k) =>
        storeFor(k).createJob(jobRecord({ jobId: id(`j${k}`), agentId: 'ag_0', board: pico, sessionId: session.sessionId, createdAtMs: t0 + k }), {
          maxQueuedPerBoard: 5,
          nowMs: t0 + k,
        }),
      ),
    );
    expect(answers.filter((a) => a.kind === 'created')).toHaveLength(5);
    expect(answers.filter((a) => a.kind === 'queue-full')).toHaveLength(7);
    expect((await stores[1]!.boardActivity()).get(pico)).toEqual({ queued: 5, active: 0 });
  });

  it('hands every job to one worker only, oldest first per board, with workers on every store claiming at once', async () => {
    const { id, board, t0 } = freshRun();
    const boards = BOARDS.map((b) => board(b));
    const created = new Map<string, string[]>(boards.map((b) => [b, []]));
    // Jobs of sessions (one per board), created one after the other: their creation order is the order to keep.
    for (const [k, b] of boards.entries()) {
      await storeFor(k).openSession(sessionRecord({ sessionId: id(`s_${b}`), agentId: `ag_${k}`, board: b, createdAtMs: t0, expiresAtMs: t0 + 3_600_000 }));
    }
    for (let n = 0; n < 24; n++) {
      const b = boards[n % boards.length]!;
      const k = boards.indexOf(b);
      const jobId = id(`j${n}`);
      const answer = await storeFor(n).createJob(jobRecord({ jobId, agentId: `ag_${k}`, board: b, sessionId: id(`s_${b}`), createdAtMs: t0 + n }), {
        maxQueuedPerBoard: 100,
        nowMs: t0 + n,
      });
      expect(answer.kind).toBe('created');
      created.get(b)!.push(jobId);
    }
    const claimedInOrder = new Map<string, string[]>(boards.map((b) => [b, []]));
    const claimedBy = new Map<string, string>();
    // Six workers, two per store, each claiming until every job is taken. A worker finishes its
    // job before it claims again, so a board's next job can only be claimed after the last finished.
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        const workerId = `w${w}`;
        const store = storeFor(w);
        for (let tick = 1; claimedBy.size < 24; tick++) {
          const job: JobRecord | undefined = await store.claimJob({ workerId, boards, nowMs: t0 + 1000 + tick, claimMs: null });
          if (!job) continue;
          expect(claimedBy.has(job.jobId)).toBe(false);
          claimedBy.set(job.jobId, workerId);
          claimedInOrder.get(job.board)!.push(job.jobId);
          await store.finishJob(job.jobId, done(t0 + 1000 + tick), { workerId });
        }
      }),
    );
    expect(claimedBy.size).toBe(24);
    for (const b of boards) expect(claimedInOrder.get(b)).toEqual(created.get(b));
  });

  it('expires a due session once however many stores sweep, and never one that a racing job keeps alive', async () => {
    const { id, board, t0 } = freshRun();
    const sessions = Array.from({ length: 8 }, (_, k) =>
      sessionRecord({ sessionId: id(`s${k}`), agentId: `ag_${k % AGENTS}`, board: board(`b${k}`), idleSeconds: 10, createdAtMs: t0, expiresAtMs: t0 + 10_000 }),
    );
    for (const [k, s] of sessions.entries()) expect((await storeFor(k).openSession(s)).kind).toBe('opened');
    // At t0 + 10 s every session is due: sweeps on every store race jobs submitted into half the sessions.
    const dueMs = t0 + 10_000;
    const racers = [
      ...stores.flatMap((store) => [store.expireSessions(dueMs), store.expireSessions(dueMs + 1)]),
      ...sessions
        .filter((_, k) => k % 2 === 0)
        .map((s, k) => storeFor(k).createJob(jobRecord({ jobId: id(`j_${s.sessionId}`), agentId: s.agentId, board: s.board, sessionId: s.sessionId, createdAtMs: dueMs - 1 }), {
          maxQueuedPerBoard: 8,
          nowMs: dueMs - 1,
        })),
    ];
    const results = await Promise.all(racers);
    const expired = results.slice(0, stores.length * 2).flatMap((r) => r as Array<{ sessionId: string }>).map((s) => s.sessionId);
    expect(new Set(expired).size).toBe(expired.length);
    for (const s of sessions) {
      const now = await stores[0]!.getSession(s.sessionId, dueMs + 1);
      const job = await stores[0]!.getJob(id(`j_${s.sessionId}`));
      if (expired.includes(s.sessionId)) {
        // Expired: then no job of it is left waiting (either it never got in, or it was cancelled).
        expect(now!.state).toBe('expired');
        expect(job?.state ?? 'failed').toBe('failed');
      } else {
        // Alive: only because a job got in before the sweep, and that job waits in the queue.
        expect(now!.state).toBe('active');
        expect(job?.state).toBe('queued');
      }
    }
    // Every session without a racing job expired, exactly once.
    const withoutJob = sessions.filter((_, k) => k % 2 === 1).map((s) => s.sessionId);
    for (const s of withoutJob) expect(expired.filter((e) => e === s)).toHaveLength(1);
  });

  it('fails a lapsed claim once and answers one secret to every store creating it at once', async () => {
    const { id, board, t0 } = freshRun();
    const boards = Array.from({ length: 6 }, (_, k) => board(`b${k}`));
    for (const [k, b] of boards.entries()) {
      await storeFor(k).createJob(jobRecord({ jobId: id(`j${k}`), agentId: `ag_${k}`, board: b, createdAtMs: t0 }), { maxQueuedPerBoard: 8, nowMs: t0 });
      expect(await storeFor(k).claimJob({ workerId: 'remote', boards: [b], nowMs: t0, claimMs: 1000 })).toMatchObject({ jobId: id(`j${k}`) });
    }
    const swept = (await Promise.all(stores.flatMap((s) => [s.failLapsedClaims(t0 + 1000), s.failLapsedClaims(t0 + 2000)]))).flat();
    expect(swept.map((j) => j.jobId).sort()).toEqual(boards.map((_, k) => id(`j${k}`)).sort());
    expect((await stores[0]!.listLeases(t0 + 2000)).filter((l) => boards.includes(l.board))).toEqual([]);

    const secrets = await Promise.all(stores.map((s, k) => s.secret(id('key'), () => new Uint8Array([k, k, k]))));
    for (const secret of secrets) expect(secret).toEqual(secrets[0]);
  });
});
