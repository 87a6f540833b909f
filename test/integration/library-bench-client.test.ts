import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import {
  BenchAuthError,
  BenchBusyError,
  BenchClient,
  BenchNotFoundError,
  BenchRateLimitError,
  BenchTimeoutError,
  BenchUnavailableError,
  BenchValidationError,
  type UartEvent,
} from '../../lib/index.js';
import type { RunningBenchServer } from '../../server/bench/start-bench-server.js';
import { startSystemClockBench } from '../support/system-clock-bench.js';
import { makeElf } from '../support/make-elf.js';

/**
 * The public `BenchClient` (lib/, `import { BenchClient } from 'hilbench'`) against a real bench
 * service over loopback HTTP on the system clock: every method, each error class, retries that
 * honour Retry-After, abort and timeout, and sessions that end however their block exits.
 */

const catalog = loadBoardCatalog();

/** A small ARM image in `board`'s flash, optionally with a mock fault (docs/backends/mock.md). */
function elfFor(board: string, fault?: string): Uint8Array {
  const memory = catalog.find((b) => b.id === board)!.mcu.memory;
  const flash = memory.find((m) => m.kind === 'flash') ?? memory[0]!;
  const sections = fault ? [{ name: '.hilbench.mock', data: new TextEncoder().encode(`fault=${fault}`) }] : [];
  return makeElf({ segments: [{ paddr: flash.start, data: new Uint8Array(64) }], sections });
}

let server: RunningBenchServer;
let client: BenchClient;

beforeAll(async () => {
  server = await startSystemClockBench({ backend: 'mock', backends: { mock: new MockBackend() }, limits: { maxQueuedJobsPerBoard: 1, agentRegistrationsPerMinute: 30 } });
  client = new BenchClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server.close();
});

async function agent(label = 'agent'): Promise<BenchClient> {
  return client.withToken((await client.register(label)).token);
}

describe('BenchClient against a real bench service', () => {
  it('registers, lists boards and health, and flashes to a finished job with its UART', async () => {
    const alice = await agent('alice');
    expect((await alice.health()).status).toBe('ok');
    expect((await alice.boards()).map((b) => b.id)).toContain('pico');
    const job = await alice.flash('pico', elfFor('pico'), { uartSeconds: 0.3 });
    expect(job.state).toBe('done');
    expect(job.uart?.text).toContain('hilbench-mock: tick 3');
    expect((await alice.getJob(job.job_id)).job_id).toBe(job.job_id);
  });

  it('flash waits for its job in one long poll when the job ends within it: no plain read first', async () => {
    const token = (await client.register('counted')).token;
    const jobReads: string[] = [];
    const counting: typeof fetch = (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if ((init?.method ?? 'GET') === 'GET' && /\/api\/v1\/jobs\/[^/?]+(\?|$)/.test(url)) jobReads.push(url.replace(/^.*\/api\/v1\/jobs\//, ''));
      return fetch(input, init);
    };
    const counted = new BenchClient({ baseUrl: server.url, fetch: counting }).withToken(token);
    const job = await counted.flash('pico', elfFor('pico'), { uartSeconds: 0.3 });
    expect(job.state).toBe('done');
    expect(jobReads).toEqual([`${job.job_id}?wait=60`]);
  });

  it('a session heartbeats, flashes on its board and ends; `await using` ends it when the block throws', async () => {
    const alice = await agent();
    const session = await alice.openSession('microbit', { idleSeconds: 30 });
    expect((await session.flash(elfFor('microbit'), { uartSeconds: 0.1 })).state).toBe('done');
    expect((await alice.heartbeat(session.id)).state).toBe('active');
    expect((await session.end()).state).toBe('ended');
    expect((await session.end()).state).toBe('ended');

    let sid = '';
    await expect(
      (async () => {
        await using held = await alice.openSession('pico');
        sid = held.id;
        throw new Error('the test body failed');
      })(),
    ).rejects.toThrow('the test body failed');
    expect((await alice.getSession(sid)).state).toBe('ended');
  });

  it('throws one error class per failure, with the status, detail and Retry-After', async () => {
    await expect(new BenchClient({ baseUrl: server.url, token: 'hb_nope' }).boards().then(() => client.withToken('hb_nope').getJob('x'))).rejects.toBeInstanceOf(BenchAuthError);
    const alice = await agent();
    await expect(alice.getJob('job_does_not_exist')).rejects.toBeInstanceOf(BenchNotFoundError);
    const invalid = await alice.flash('pico', elfFor('pico'), { uartSeconds: -1 }).catch((err: unknown) => err);
    expect(invalid).toBeInstanceOf(BenchValidationError);
    expect((invalid as BenchValidationError).issues[0]).toMatchObject({ loc: ['body', 'uart_seconds'] });

    const held = await alice.openSession('lm3s6965evb');
    const bob = await agent('bob');
    const busy = await bob.openSession('lm3s6965evb').catch((err: unknown) => err);
    expect(busy).toBeInstanceOf(BenchBusyError);
    expect((busy as BenchBusyError).status).toBe(409);
    expect((busy as BenchBusyError).retryAfterSeconds).toBeGreaterThan(0);

    // One job waits per board (limits above): the next is a 429.
    const hung = await held.submitFlash(elfFor('lm3s6965evb', 'run-hang'));
    await held.submitFlash(elfFor('lm3s6965evb'));
    await expect(held.submitFlash(elfFor('lm3s6965evb'))).rejects.toBeInstanceOf(BenchRateLimitError);
    await held.end();
    expect((await alice.waitForJob(hung.job_id)).failure?.kind).toBe('cancelled');
  });

  it('retries a 409 as long as Retry-After says, and gets the board once it is free', async () => {
    const alice = await agent();
    const held = await alice.openSession('mps2-an385');
    const waits: number[] = [];
    const bob = new BenchClient({
      baseUrl: server.url,
      token: (await client.register('bob')).token,
      retry: { attempts: 2, maxRetryDelayMs: 120_000 },
      // Instead of sleeping: note the wait, and free the board meanwhile.
      sleep: async (ms) => {
        waits.push(ms);
        await held.end();
      },
    });
    const session = await bob.openSession('mps2-an385');
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(1000);
    await session.end();
    const never = new BenchClient({ baseUrl: server.url, token: (await client.register('carol')).token, retry: { attempts: 1 }, sleep: async () => undefined });
    const blocker = await alice.openSession('mps2-an385');
    await expect(never.openSession('mps2-an385')).rejects.toBeInstanceOf(BenchBusyError);
    await blocker.end();
  });

  it('a 503 is a BenchUnavailableError, tried again after Retry-After when the policy allows', async () => {
    let refusals = 1;
    const flaky: typeof fetch = async (input, init) => {
      if (refusals-- > 0) return new Response('{"detail":"the database is not answering"}', { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '2' } });
      return fetch(input, init);
    };
    const waits: number[] = [];
    const patient = new BenchClient({ baseUrl: server.url, fetch: flaky, retry: { attempts: 1 }, sleep: async (ms) => void waits.push(ms) });
    expect((await patient.health()).status).toBe('ok');
    expect(waits).toEqual([2000]);
    refusals = 1;
    const impatient = new BenchClient({ baseUrl: server.url, fetch: flaky });
    const refused = await impatient.health().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(BenchUnavailableError);
    expect(refused).toMatchObject({ status: 503, detail: 'the database is not answering', retryAfterSeconds: 2 });
  });

  it('a call gives up at its timeout, and an aborted call rejects with the abort reason', async () => {
    const alice = await agent();
    const session = await alice.openSession('mps2-an386');
    const hung = await session.submitFlash(elfFor('mps2-an386', 'run-hang'));
    const timedOut = await alice.waitForJob(hung.job_id, { timeoutMs: 300 }).catch((err: unknown) => err);
    expect(timedOut).toBeInstanceOf(BenchTimeoutError);
    expect((timedOut as BenchTimeoutError).message).toMatch(/waiting for job .*: no answer within 300 ms; last seen: state (queued|flashing|running)/);
    const controller = new AbortController();
    const aborted = alice.getJob(hung.job_id, { waitSeconds: 30, signal: controller.signal });
    controller.abort(new Error('the caller stopped waiting'));
    await expect(aborted).rejects.toThrow('the caller stopped waiting');
    await session.end();
  });

  it('streams a running job\'s UART live, takes serial input, and waits for a pattern', async () => {
    const alice = await agent();
    const session = await alice.openSession('netduinoplus2');
    // The mock's run-hang job runs until stopped, printing nothing but the serial input it echoes.
    const job = await session.submitFlash(elfFor('netduinoplus2', 'run-hang'));
    await waitUntil(systemClock, async () => ((await alice.getJob(job.job_id)).state === 'running' ? true : undefined), { timeoutMs: 10_000, describe: 'the job to run' });
    expect(await alice.writeUart(job.job_id, 'ping\n')).toBe(5);
    expect(await alice.waitForUart(job.job_id, 'ping')).toMatchObject({ matched: true });
    expect(await alice.waitForUart(job.job_id, 'never printed', { timeoutMs: 200 })).toMatchObject({ matched: false, reason: 'timeout' });
    await session.end();
    const events: UartEvent[] = [];
    for await (const event of alice.uart(job.job_id)) events.push(event);
    expect(events.at(-1)).toMatchObject({ kind: 'end', job: { state: 'failed' } });
    expect(events.filter((e) => e.kind === 'uart').map((e) => (e.kind === 'uart' ? e.text : '')).join('')).toContain('ping');
    await expect(alice.writeUart(job.job_id, 'late')).rejects.toBeInstanceOf(BenchBusyError);
  });

  it('falls back to polling on a service without the live stream', async () => {
    const token = (await client.register('old')).token;
    const withoutStream: typeof fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.endsWith('/uart') && (init?.method ?? 'GET') === 'GET') return new Response('{"detail":"Method Not Allowed"}', { status: 405, headers: { 'content-type': 'application/json' } });
      return fetch(input, init);
    };
    const old = new BenchClient({ baseUrl: server.url, token, fetch: withoutStream });
    const job = await old.submitFlash('stm32vldiscovery', elfFor('stm32vldiscovery'), { uartSeconds: 0.2 });
    const events: UartEvent[] = [];
    for await (const event of old.uart(job.job_id)) events.push(event);
    expect(events.at(-1)?.kind).toBe('end');
    expect(events.map((e) => (e.kind === 'uart' ? e.text : '')).join('')).toContain('hilbench-mock: tick 2');
  });
});
