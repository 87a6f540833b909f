import { createClock } from '@sinonjs/fake-timers';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { createWorkerToken, startLabWorker } from '../support/lab-worker.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer, getJob, picoElf, submit } from './bench-job-requests.js';

/**
 * Two replicas on one PostgreSQL database with a pool spanning two workers (issue 27, decisions
 * 0510 and 0555): 100 agents race through both replicas for the four instances of `pico`. Four
 * hold them first; the other 96 wait in the pool's queue, which lives in the store. Then every
 * agent, as it is granted a session, runs a job in it and ends it. No instance is ever held twice,
 * every accepted job ends done, and the sessions are granted in the order the store queued them.
 *
 * The fake clock shared by both replicas never moves once the agents wait: every grant is woken by
 * an event (a lease freed or a waiter leaving: NOTIFY from the other replica, or this one's own),
 * never by the poll, and no waiter's liveness can run out. Waits are bounded and say what they
 * waited for.
 */

const ADMIN = 'pool-racing-admin';
const AGENTS = 100;
const INSTANCES = 4;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const openSession = (app: BenchTestApp, token: string, fields: Record<string, string>) =>
  app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams(fields) });

const bounded = { timeoutMs: 120_000, pollMs: 50 };

describe('two replicas with a pool spanning two workers, 100 agents racing', () => {
  it('never books an instance twice, ends every accepted job, and grants the queued sessions first come first served', { timeout: 600_000 }, async () => {
    const database = await createTestDatabase({ migrated: 'bench' });
    cleanups.push(database.drop);
    const fake = createClock(TEST_START_MS);
    const config = { fake, databaseUrl: database.url, localWorker: false as const, adminToken: ADMIN };
    const a = await startBenchTestApp(config);
    cleanups.push(() => a.close());
    const b = await startBenchTestApp(config);
    cleanups.push(() => b.close());
    const replicas = [a, b];
    // One worker of two instances dials each replica: the pool spans workers and replicas.
    const replicaOfWorker = new Map<string, BenchTestApp>();
    for (const [k, replica] of replicas.entries()) {
      const { token, worker_id } = await createWorkerToken(replica.request, { adminToken: ADMIN, label: `farm-${k}` });
      const worker = await startLabWorker({ serverUrl: replica.url, token, clock: clockFromFakeTimers(fake), boards: ['pico'], poolSizes: { all: 2 } });
      cleanups.push(worker.close);
      replicaOfWorker.set(worker_id, replica);
    }
    // Each replica learns of the other's worker once its availability cache (5 s) runs out.
    await fake.tickAsync(5_000);
    const agents = await Promise.all(Array.from({ length: AGENTS }, (_, i) => replicas[i % 2]!.register(`agent-${i}`)));
    const labelOf = new Map(agents.map((agent, i) => [agent.agentId, i]));

    // Four agents take the four instances.
    const blockers: Array<{ token: string; session_id: string }> = [];
    for (const [i, agent] of agents.slice(0, INSTANCES).entries()) {
      const res = await openSession(replicas[i % 2]!, agent.token, { board: 'pico', idle_seconds: '3600' });
      expect(res.status, await res.clone().text()).toBe(200);
      blockers.push({ token: agent.token, session_id: ((await res.json()) as { session_id: string }).session_id });
    }

    // The other 96 race, through both replicas at once, each waiting in pico's queue.
    const held = new Set<string>();
    const doubleBooked: string[] = [];
    const jobsEnded: Array<{ job_id: string; state: string; instance?: string }> = [];
    const flows = agents.slice(INSTANCES).map(async (agent, k) => {
      const through = replicas[k % 2]!;
      const res = await openSession(through, agent.token, { board: 'pico', idle_seconds: '3600', wait_seconds: '300' });
      expect(res.status, `agent ${labelOf.get(agent.agentId)}: ${await res.clone().text()}`).toBe(200);
      const session = (await res.json()) as { session_id: string; instance: string };
      if (held.has(session.instance)) doubleBooked.push(session.instance);
      held.add(session.instance);
      // The job goes through the replica its instance's worker dials, which wakes that worker's claim at once.
      const runner = replicaOfWorker.get(session.instance.split('@')[1]!)!;
      const job = await submit(runner, agent.token, { board: 'pico', session: session.session_id, uart_seconds: '0.1' }, picoElf());
      expect(job.instance).toBe(session.instance);
      const ended = await waitUntil(
        systemClock,
        async () => {
          const seen = await getJob(runner, agent.token, job.job_id);
          return ['done', 'failed'].includes(seen.state) ? seen : undefined;
        },
        { ...bounded, describe: `job ${job.job_id} of agent ${labelOf.get(agent.agentId)} on ${session.instance} to end` },
      );
      jobsEnded.push(ended);
      held.delete(session.instance);
      const end = await through.request(`/api/v1/sessions/${session.session_id}/end`, { method: 'POST', headers: bearer(agent.token) });
      expect(end.status).toBe(200);
    });

    // The first agent whose flow fails fails the test at once, whatever it waits for meanwhile.
    const firstFailure = Promise.race(flows.map((flow) => flow.then(() => new Promise<never>(() => undefined))));
    // Every one of them waits in the store's queue before any instance frees.
    const queue = () => a.server.service.store.sessionQueue.waiters('pico', fake.now);
    const queued = await Promise.race([
      firstFailure,
      waitUntil(systemClock, async () => {
        const waiters = await queue();
        return waiters.length === AGENTS - INSTANCES ? waiters : undefined;
      }, { ...bounded, describe: `${AGENTS - INSTANCES} agents waiting in pico's queue` }),
    ]);
    const order = queued.map((w) => labelOf.get(w.agentId));
    expect(new Set(order).size).toBe(AGENTS - INSTANCES);
    expect(await (await a.request('/api/v1/boards/pico/queue', { headers: bearer(agents[INSTANCES + 1]!.token) })).json()).toMatchObject({ waiting: AGENTS - INSTANCES });

    const clockBefore = fake.now;
    for (const [i, blocker] of blockers.entries()) {
      const end = await replicas[(i + 1) % 2]!.request(`/api/v1/sessions/${blocker.session_id}/end`, { method: 'POST', headers: bearer(blocker.token) });
      expect(end.status).toBe(200);
    }
    await Promise.all(flows);
    expect(fake.now, 'the fake clock moved: a grant may have come from the poll, not an event').toBe(clockBefore);

    expect(doubleBooked).toEqual([]);
    expect(jobsEnded).toHaveLength(AGENTS - INSTANCES);
    expect(jobsEnded.filter((j) => j.state !== 'done')).toEqual([]);
    // The sessions were granted in the order the store queued them (the database's order of sessions).
    const client = new pg.Client(pgConnection(database.url));
    await client.connect();
    try {
      const rows = (await client.query("SELECT agent_id FROM sessions WHERE board = 'pico' ORDER BY seq")).rows as Array<{ agent_id: string }>;
      expect(rows.slice(INSTANCES).map((r) => labelOf.get(r.agent_id))).toEqual(order);
      const leases = (await client.query('SELECT COUNT(*)::int AS n FROM leases')).rows as Array<{ n: number }>;
      expect(leases[0]!.n).toBe(0);
      const waiting = (await client.query('SELECT COUNT(*)::int AS n FROM session_waiters')).rows as Array<{ n: number }>;
      expect(waiting[0]!.n).toBe(0);
    } finally {
      await client.end();
    }
  });
});
