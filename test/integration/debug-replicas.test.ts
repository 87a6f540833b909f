import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { DebugRefused, DebugStreamClient } from '../../bin/debug-stream-client.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { debugElf } from '../support/gdb-batch.js';
import { createWorkerToken, startLabWorker } from '../support/lab-worker.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer, flash } from './bench-job-requests.js';

/**
 * Debugging behind two replicas of one PostgreSQL database (issue 32, decision 0625): a debug job
 * needs its arming, its worker's claim and both WebSockets on one replica. Through the replica
 * the board's worker connects to, it works although another replica shares the database; armed
 * through the other, the job runs as an ordinary one and its stream is refused with the rule.
 */
const ADMIN = 'replica-admin';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Replicas a and b on one database, the system clock (the sim runs in real time), and pico's worker connected to b. */
async function twoReplicas(): Promise<{ a: BenchTestApp; b: BenchTestApp }> {
  const database = await createTestDatabase();
  cleanups.push(database.drop);
  const config = { databaseUrl: database.url, localWorker: false as const, adminToken: ADMIN, clock: systemClock };
  const a = await startBenchTestApp(config);
  cleanups.push(() => a.close());
  const b = await startBenchTestApp(config);
  cleanups.push(() => b.close());
  const { token } = await createWorkerToken(b.request, { adminToken: ADMIN, label: 'pi-debug' });
  const worker = await startLabWorker({ serverUrl: b.url, token, clock: systemClock, boards: ['pico'], backends: { sim: new SimBackend({ clock: systemClock }) }, choice: 'sim' });
  cleanups.push(worker.close);
  // Replica a learns of the worker's boards once its availability cache (5 s) runs out.
  let seen = '';
  await waitUntil(
    systemClock,
    async () => {
      const { boards } = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string }> };
      seen = boards.find((board) => board.id === 'pico')?.status ?? 'missing';
      return seen === 'free' ? true : undefined;
    },
    { timeoutMs: 30_000, pollMs: 250, describe: 'replica a to see pico served', lastSeen: () => seen },
  );
  return { a, b };
}

/** On `arming`: a session on pico, armed, and `elf` submitted in it (`uartSeconds` of device time after a detach). */
async function armedJob(arming: BenchTestApp, token: string, elf: string, uartSeconds: string): Promise<string> {
  const opened = await arming.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico', idle_seconds: '120' }) });
  expect(opened.status, await opened.clone().text()).toBe(200);
  const { session_id: sessionId } = (await opened.json()) as { session_id: string };
  const armed = await arming.request(`/api/v1/sessions/${sessionId}/debug`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{}' });
  expect(armed.status, await armed.clone().text()).toBe(200);
  const submitted = await flash(arming, token, { board: 'pico', uart_seconds: uartSeconds, session: sessionId }, readFileSync(elf));
  expect(submitted.status, await submitted.clone().text()).toBe(200);
  return ((await submitted.json()) as { job_id: string }).job_id;
}

describe('debugging behind two replicas of one database', () => {
  it('works through the replica the board’s worker connects to, another replica beside it', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas();
    const alice = await a.register('alice');
    const jobId = await armedJob(b, alice.token, debugElf('pico'), '1');
    await b.jobReaches(jobId, 'running', 'failed');
    expect((await a.server.service.store.getJob(jobId))?.state).toBe('running');
    const stream = await new DebugStreamClient({ server: b.url, token: alice.token }).open(jobId);
    let seen = '';
    const stopReply = new Promise<string>((resolve) =>
      stream.onData((bytes) => {
        seen += bytes.toString('latin1');
        if (/\$[ST][0-9a-f]{2}/.test(seen)) resolve(seen);
      }),
    );
    stream.send(Buffer.from(rspPacket('?'), 'latin1'));
    expect(await stopReply).toMatch(/\$[ST]05/);
    // Killing the target ends the job as a kill does locally: done.
    stream.send(Buffer.from(`+${rspPacket('k')}`, 'latin1'));
    await b.jobReaches(jobId, 'done', 'failed');
    expect((await a.server.service.store.getJob(jobId))?.state).toBe('done');
  });

  it('armed through the other replica, the job is not a debug job and its stream is refused with the replica rule', { timeout: 120_000 }, async () => {
    const { a, b } = await twoReplicas();
    const alice = await a.register('alice');
    // hello ticks for ever: the ordinary job still runs (30 s of device time) when the stream is asked for.
    const jobId = await armedJob(a, alice.token, path.join(import.meta.dirname, '../../firmware/examples/pico/hello.elf'), '30');
    await b.jobReaches(jobId, 'running');
    for (const replica of [a, b]) {
      const refused = await new DebugStreamClient({ server: replica.url, token: alice.token }).open(jobId).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(DebugRefused);
      expect((refused as DebugRefused).status).toBe(409);
      expect((refused as DebugRefused).detail).toMatch(/was not submitted for debugging on this server: .* behind several replicas, arm and open streams on the replica the board's worker connects to \(docs\/deployment\.md, "Debugging behind replicas"\)$/);
    }
  });
});
