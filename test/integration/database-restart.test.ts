import { readFileSync } from 'node:fs';
import { createClock } from '@sinonjs/fake-timers';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { BenchApiError } from '../../clients/bench/bench-errors.js';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { startBenchServer } from '../../server/bench/start-bench-server.js';
import { memoryLogger } from '../../server/http/logger.js';
import { SessionQueue } from '../../server/bench/domain/session-queue.js';
import type { SessionRecord } from '../../server/storage/bench/bench-store.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { until } from '../support/hilbench-processes.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { call, registrationFor, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * A database restart is a fault the services survive (issue 27, decision 0516). Each case runs on
 * a PostgreSQL cluster of this file's own (test/support/private-postgres.ts), so stopping it
 * disturbs no other test file. Under load, the database stops: every request is answered (503 with
 * `Retry-After` and a FastAPI detail, never a 500) and the process lives on; the database starts
 * again: the service serves again by itself, and every job it accepted, before or during the
 * outage, ends done or failed with a reason. Waits are bounded and say what they waited for.
 */

let database: PrivatePostgres;
beforeAll(() => {
  database = startPrivatePostgres();
}, 180_000);
afterAll(() => database?.remove());

/** Calls `fn` until it gives a value, at most `boundMs`. */
async function eventually<T>(what: string, fn: () => Promise<T | undefined>, boundMs = 60_000): Promise<T> {
  let value: T | undefined;
  await until(what, async () => (value = await fn()) !== undefined, boundMs);
  return value!;
}

describe('the bench service across a database restart', () => {
  it('answers 503 with Retry-After while the database is away, keeps every job it accepted, and serves again by itself', { timeout: 240_000 }, async () => {
    const dataDir = tempDataDir('bench-restart-');
    const logger = memoryLogger();
    const boards = loadBoardCatalog();
    const bench = await startBenchServer({
      port: 0,
      dataDir: dataDir.dir,
      boards,
      backend: 'mock',
      databaseUrl: database.url,
      clock: systemClock,
      publicBaseUrl: 'http://127.0.0.1',
      logger,
      limits: { agentRegistrationsPerMinute: 1_000_000 },
      checkImage: () => undefined,
    });
    const firmware = new Uint8Array(readFileSync(new URL('../../firmware/examples/pico/hello.elf', import.meta.url)));
    const client = new BenchClient({ baseUrl: bench.url });
    const loadBoards = boards.slice(0, 6).map((b) => b.id);
    const agents = await Promise.all(loadBoards.map((_, k) => client.register(`restart-${k}`)));
    const accepted: Array<{ jobId: string; token: string }> = [];
    const refusals = new Map<number, number>();
    let finished = 0;
    let stop = false;
    let stopped = false;
    /** `request` until it is not refused, counting each refusal by status; a pause between tries. */
    const asked = async <T>(request: () => Promise<T>): Promise<T> => {
      for (;;) {
        try {
          return await request();
        } catch (err) {
          if (!(err instanceof BenchApiError)) throw err;
          refusals.set(err.status, (refusals.get(err.status) ?? 0) + 1);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    // Six agents each submitting a job and waiting for it to end, in a loop, as a CI pipeline does:
    // a refused submission is sent again, a refused look at the job is made again.
    const load = loadBoards.map(async (board, k) => {
      const token = agents[k]!.token;
      while (!stop) {
        const job = await asked(() => client.withToken(token).submitFlash(board, firmware, { uartSeconds: 0.05 }));
        accepted.push({ jobId: job.job_id, token });
        await asked(() => client.withToken(token).waitForJob(job.job_id, { timeoutMs: 120_000 }));
        finished++;
      }
    });
    try {
      await until('six jobs done before the restart', () => finished >= 6);
      const firstJob = accepted[0]!;
      database.stop();
      stopped = true;
      // While it is away: a read and a write are answered 503, with Retry-After and a detail saying why.
      for (const answer of [
        await call(bench.url, 'GET', `/api/v1/jobs/${firstJob.jobId}`, { auth: `Bearer ${firstJob.token}` }),
        // A well-formed write (a form, as the API takes it): the agent is known without the database
        // (decision 0600), so it is the write that finds the database away.
        await call(bench.url, 'POST', '/api/v1/sessions', {
          auth: `Bearer ${firstJob.token}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          rawBody: new URLSearchParams({ board: loadBoards[0]! }).toString(),
        }),
      ]) {
        expect(answer.status, answer.text).toBe(503);
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(answer.body).toEqual({ detail: expect.stringMatching(/^the bench's database is unavailable/) });
      }
      const health = await call(bench.url, 'GET', '/api/v1/health');
      expect(health.body).toMatchObject({ status: 'degraded', database: 'error' });
      const finishedBefore = finished;
      database.start();
      stopped = false;
      await until('six more jobs done after the database came back', () => finished >= finishedBefore + 6, 120_000);
      stop = true;
      await Promise.all(load);
      // Nothing accepted is lost: every job ends done, or failed with its reason.
      for (const { jobId, token } of accepted) {
        const job = await eventually(`job ${jobId} to end`, async () => {
          const seen = await client.withToken(token).getJob(jobId);
          return seen.state === 'done' || seen.state === 'failed' ? seen : undefined;
        });
        if (job.state === 'failed') expect(job.failure?.message ?? '').not.toBe('');
      }
      expect([...refusals.keys()].filter((status) => status !== 503)).toEqual([]);
      expect(await call(bench.url, 'GET', '/api/v1/health')).toMatchObject({ body: { database: 'ok' } });
    } finally {
      stop = true;
      // A failed expectation while the database was away: the load's retries end only once it is back.
      if (stopped) database.start();
      await Promise.allSettled(load);
      await bench.close();
      dataDir.remove();
    }
  });
});

describe('the relay service across a database restart', () => {
  it('answers 503 with Retry-After while the database is away and serves what it took, before and after, once it is back', { timeout: 180_000 }, async () => {
    const dataDir = tempDataDir('relay-restart-');
    const relay = await startRelayServer({
      port: 0,
      clock: systemClock,
      dataDir: dataDir.dir,
      databaseUrl: database.url,
      logger: memoryLogger(),
      rateLimits: { registrationsPerMinute: 100_000, signInsPerMinute: 100_000 },
    });
    const register = (name: string) => call(relay.baseUrl, 'POST', '/register', { body: registrationFor(generateNodeKey(), relay.baseUrl, systemClock, name) });
    try {
      const before = await register('before');
      expect(before.status, before.text).toBe(201);
      const auth = String(before.body.authorization);
      const item = await call(relay.baseUrl, 'POST', '/items', { body: { kind: 'statement', title: 'before the restart', body: '' }, auth });
      expect(item.status, item.text).toBe(201);
      database.stop();
      for (const answer of [await call(relay.baseUrl, 'GET', `/items/${String(item.body.id)}`), await register('during')]) {
        expect(answer.status, answer.text).toBe(503);
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(answer.body).toEqual({ detail: expect.stringMatching(/^the relay's database is unavailable/) });
      }
      database.start();
      const after = await eventually('a registration taken again after the restart', async () => {
        const answer = await register('after');
        if (answer.status === 503) return undefined;
        return answer;
      });
      expect(after.status, after.text).toBe(201);
      const seen = await call(relay.baseUrl, 'GET', `/items/${String(item.body.id)}`);
      expect(seen.status, seen.text).toBe(200);
      expect(seen.body).toMatchObject({ title: 'before the restart' });
      const me = await call(relay.baseUrl, 'GET', '/me', { auth });
      expect(me.status, me.text).toBe(200);
    } finally {
      await relay.close();
      dataDir.remove();
    }
  });
});

describe('the session queue across a database restart', () => {
  it("listens again once the database is back and wakes its waiters by the database's events, not by the poll", { timeout: 180_000 }, async () => {
    // A database of its own in the private cluster (the bench service's test above writes `postgres`).
    const admin = new pg.Client(pgConnection(database.url));
    await admin.connect();
    await admin.query('CREATE DATABASE session_queue_restart');
    await admin.end();
    const url = database.url.replace('/postgres?', '/session_queue_restart?');
    const T0 = 1_700_000_000_000;
    const fake = createClock(T0);
    const clock = clockFromFakeTimers(fake);
    const store = await PostgresBenchStore.open(url, { poolSize: 2, clock });
    // The poll is an hour: the fake clock never gets there, so only the database's events wake the waiter.
    const pollMs = 3_600_000;
    const queue = new SessionQueue({ clock, store: store.sessionQueue, logger: memoryLogger(), retryMs: pollMs });
    const session = (sessionId: string, agentId: string): SessionRecord => ({
      sessionId,
      agentId,
      board: 'pico',
      state: 'active',
      idleSeconds: 3_600,
      createdAtMs: clock.nowMs(),
      expiresAtMs: clock.nowMs() + 3_600_000,
      endedAtMs: null,
      lastHeartbeatAtMs: null,
    });
    const abort = new AbortController();
    let waited: Promise<unknown> | undefined;
    try {
      for (const agentId of ['ag_holder', 'ag_waiter']) await store.insertAgent({ agentId, label: agentId, tokenSha256: agentId.padEnd(64, '0'), createdAtMs: T0 });
      expect(await store.openSession(session('ses_holder', 'ag_holder'))).toMatchObject({ kind: 'opened' });
      await store.sessionQueue.listening();
      let attempts = 0;
      const waiting = queue.wait({ queue: 'pico', pool: 'pico' }, 'ag_waiter', {
        waitMs: 2 * pollMs,
        signal: abort.signal,
        attempt: async () => {
          attempts++;
          const opened = await store.openSession(session('ses_waiter', 'ag_waiter'));
          return opened.kind === 'opened' ? opened.session : undefined;
        },
      });
      waited = waiting;
      // Awaited below; until then a rejection must not count as unhandled (the await reports it).
      waiting.catch(() => undefined);
      await until('the waiter to try once and wait (pico is held)', () => attempts === 1);

      database.restart();
      // The store's connections come back by themselves, each try after the backoff of the injected clock.
      await until('the store to answer again after the restart', async () => {
        fake.tick(5_000);
        return store.ping().then(
          () => true,
          () => false,
        );
      });
      // Lease freed while nobody listened would be lost: on listening again the store says that
      // anything may have changed, and the waiter looks (still held: it waits on).
      await until('the waiter to look again once the store listens again (events lost during the restart)', () => {
        if (attempts < 2) fake.tick(5_000);
        return attempts >= 2;
      });
      expect(fake.now - T0).toBeLessThan(pollMs);
      const ended = await store.endSession('ses_holder', clock.nowMs());
      expect(ended.kind).toBe('changed');
      // The lease freed after the restart reaches the waiter as an event: granted, the poll still far off.
      const granted = await waiting;
      expect(granted.value).toMatchObject({ sessionId: 'ses_waiter', agentId: 'ag_waiter', board: 'pico' });
      expect(attempts).toBe(3);
      expect(fake.now - T0).toBeLessThan(pollMs);
    } finally {
      abort.abort();
      await waited?.catch(() => undefined);
      queue.close();
      await store.close();
    }
  });
});
