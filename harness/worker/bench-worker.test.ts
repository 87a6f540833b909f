import { createHash } from 'node:crypto';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { clockFromFakeTimers } from '../../core/clock.js';
import { picoTestElf } from '../../test/support/make-elf.js';
import { BenchWorker } from './bench-worker.js';
import type { HealthCheckReport, JobPush, JobTicket, UartReport, WorkerJobOutcome, WorkerLink, WorkerTask } from './worker-link.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A server as a worker sees it: a queue of tickets, firmware by sha256, and what was reported. */
class FakeServer {
  readonly tickets: WorkerTask[] = [];
  readonly healthChecks = new Map<string, HealthCheckReport>();
  readonly firmwareBySha = new Map<string, Uint8Array>();
  readonly reports: Array<[string, string]> = [];
  readonly uart = new Map<string, UartReport[]>();
  readonly outcomes = new Map<string, WorkerJobOutcome>();
  stopOnHeartbeat: string | null = null;
  claimFailures = 0;
  /** Serial input per job as the server hands it out (a test may hand one out twice), and each fetch's acknowledgement. */
  readonly inputs = new Map<string, Array<{ seq: number; bytes: Uint8Array }>>();
  readonly acknowledged: number[] = [];
  private inputWake: (() => void) | undefined;
  private wake: (() => void) | undefined;
  private readonly watchers = new Map<string, (push: JobPush) => void>();
  private finished: Array<() => void> = [];

  queue(jobId: string, firmware: Uint8Array, over: Partial<JobTicket> = {}): void {
    this.firmwareBySha.set(sha256(firmware), firmware);
    this.tickets.push({ kind: 'job', jobId, board: 'pico', firmwareSha256: sha256(firmware), uartSeconds: 0.35, maxUartBytes: 4096, ...over });
    this.wake?.();
  }

  /** Hands out a task (a health check) with the next claim. */
  queueTask(task: WorkerTask): void {
    this.tickets.push(task);
    this.wake?.();
  }

  sendInput(jobId: string, seq: number, text: string): void {
    this.inputs.set(jobId, [...(this.inputs.get(jobId) ?? []), { seq, bytes: new TextEncoder().encode(text) }]);
    this.inputWake?.();
  }

  push(jobId: string, push: JobPush): void {
    this.watchers.get(jobId)!(push);
  }

  /** Settles once `count` outcomes are in. */
  finishedCount(count: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (this.outcomes.size + this.healthChecks.size >= count ? resolve() : this.finished.push(check));
      check();
    });
  }

  readonly link: WorkerLink = {
    claim: async (boards, signal) => {
      if (this.claimFailures > 0) {
        this.claimFailures--;
        throw new Error('connection refused');
      }
      for (;;) {
        const index = this.tickets.findIndex((t) => boards.includes(t.board));
        if (index >= 0) return this.tickets.splice(index, 1)[0];
        if (signal.aborted) return undefined;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    },
    firmware: async (ticket) => {
      const bytes = this.firmwareBySha.get(ticket.firmwareSha256);
      if (!bytes) throw new Error('404');
      return bytes;
    },
    running: async (jobId) => {
      this.reports.push([jobId, 'running']);
      return { stop: null };
    },
    uart: async (jobId, report) => {
      this.uart.set(jobId, [...(this.uart.get(jobId) ?? []), report]);
    },
    heartbeat: async (jobId) => {
      this.reports.push([jobId, 'heartbeat']);
      return { stop: this.stopOnHeartbeat };
    },
    finish: async (jobId, outcome) => {
      this.outcomes.set(jobId, outcome);
      for (const check of this.finished.splice(0)) check();
    },
    input: async (jobId, writtenThroughSeq, signal) => {
      this.acknowledged.push(writtenThroughSeq);
      for (;;) {
        const pending = this.inputs.get(jobId) ?? [];
        if (pending.length > 0 || signal.aborted) {
          this.inputs.delete(jobId);
          return { inputs: pending, lost: false };
        }
        await new Promise<void>((resolve) => {
          this.inputWake = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    },
    healthCheckDone: async (checkId, report) => {
      this.healthChecks.set(checkId, report);
      for (const check of this.finished.splice(0)) check();
    },
    watch: (jobId, listener) => {
      this.watchers.set(jobId, listener);
      return () => this.watchers.delete(jobId);
    },
  };
}

function startWorker(server: FakeServer, options: { backend?: MockBackend; link?: WorkerLink; poolSize?: number } = {}) {
  const fake = createClock(0);
  const clock = clockFromFakeTimers(fake);
  const errors: string[] = [];
  const worker = new BenchWorker({
    clock,
    link: options.link ?? server.link,
    boards: ['pico'],
    ...(options.poolSize === undefined ? {} : { poolSize: () => options.poolSize! }),
    boardFor: (id) => (id === 'pico' ? { board: pico, backend: options.backend ?? new MockBackend() } : undefined),
    heartbeatMs: 1_000,
    logError: (message) => errors.push(message),
  });
  worker.start();
  return { worker, fake, errors };
}

const text = (reports: UartReport[] | undefined) => (reports ?? []).flatMap((r) => r.chunks.map((c) => new TextDecoder().decode(c.bytes))).join('');

describe('BenchWorker', () => {
  it('claims a job, reports running, its UART in order with offsets, and the outcome; then the next job of the board', async () => {
    const server = new FakeServer();
    const { worker } = startWorker(server);
    server.queue('job_1', picoTestElf());
    server.queue('job_2', picoTestElf({ sizeBytes: 600 }));
    await server.finishedCount(2);
    const first = server.outcomes.get('job_1')!;
    expect(first).toMatchObject({ state: 'done', stop: { reason: 'elapsed' } });
    expect(server.reports.filter(([, what]) => what === 'running').map(([id]) => id)).toEqual(['job_1', 'job_2']);
    const reports = server.uart.get('job_1')!;
    expect(text(reports)).toMatch(/^hilbench-mock: reset pico\r\n.*tick 3\r\n$/s);
    // Each report starts where the one before ended.
    let offset = 0;
    for (const report of reports) {
      expect(report.offset).toBe(offset);
      offset += report.chunks.reduce((n, c) => n + c.bytes.length, 0);
    }
    expect(first.state === 'done' && first.uart.uart.length).toBe(reports.flatMap((r) => r.chunks).length);
    await worker.close();
  });

  it('stops a job the server asks to stop (push or heartbeat), reporting it cancelled', async () => {
    const server = new FakeServer();
    const { worker, fake } = startWorker(server);
    server.queue('job_push', picoTestElf({ fault: 'run-hang' }));
    await vitestWaitFor(() => server.reports.some(([id, what]) => id === 'job_push' && what === 'running'));
    server.push('job_push', { kind: 'stop', reason: 'session ses_1 ended' });
    await server.finishedCount(1);
    expect(server.outcomes.get('job_push')).toMatchObject({
      state: 'failed',
      failure: { kind: 'cancelled', message: 'job job_push cancelled: session ses_1 ended' },
    });

    server.stopOnHeartbeat = 'the claim is not yours';
    server.queue('job_beat', picoTestElf({ fault: 'run-hang' }));
    await vitestWaitFor(() => server.reports.some(([id, what]) => id === 'job_beat' && what === 'running'));
    await fake.tickAsync(5_000);
    await server.finishedCount(2);
    expect(server.outcomes.get('job_beat')).toMatchObject({ state: 'failed', failure: { message: 'job job_beat cancelled: the claim is not yours' } });
    await worker.close();
  });

  it('writes the serial input it fetches to the running device in order, once each, and acknowledges it on the next fetch', async () => {
    const server = new FakeServer();
    const { worker } = startWorker(server);
    server.queue('job_in', picoTestElf({ fault: 'run-hang' }));
    await vitestWaitFor(() => server.reports.some(([, what]) => what === 'running'));
    server.sendInput('job_in', 1, 'hi ');
    server.sendInput('job_in', 2, 'there');
    await vitestWaitFor(() => server.acknowledged.includes(2));
    // An answer the worker already had, sent again (its acknowledgement was lost), is not written twice.
    server.sendInput('job_in', 2, 'there');
    server.sendInput('job_in', 3, '!');
    await vitestWaitFor(() => server.acknowledged.includes(3));
    server.push('job_in', { kind: 'stop', reason: 'done with it' });
    await server.finishedCount(1);
    const echoed = (server.outcomes.get('job_in')?.uart?.uart ?? []).map((c) => new TextDecoder().decode(c.bytes)).join('');
    // The mock firmware echoes its serial input.
    expect(echoed).toContain('hi there!');
    expect(echoed.match(/there/g)).toHaveLength(1);
    expect(server.acknowledged.slice(0, 3)).toEqual([0, 2, 3]);
    await worker.close();
  });

  it('runs a health check it claims on its board’s backend under the ticket’s deadline, and refuses one its backend cannot run', async () => {
    /** A mock that keeps board health and whose health check never ends by itself. */
    class HangingCheckBackend extends MockBackend {
      aborted = false;
      async health() {
        return { consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined };
      }
      async release() {}
      healthCheck = (_board: string, options?: { signal?: AbortSignal }) =>
        new Promise<never>((_resolve, reject) =>
          options?.signal?.addEventListener('abort', () => {
            this.aborted = true;
            reject(new Error('aborted'));
          }),
        );
    }
    const refusing = new FakeServer();
    const plain = startWorker(refusing);
    refusing.queueTask({ kind: 'health-check', checkId: 'hc_plain', board: 'pico', timeoutMs: 5_000 });
    await refusing.finishedCount(1);
    expect(refusing.healthChecks.get('hc_plain')).toEqual({
      passed: false,
      refused: true,
      reason: 'board pico cannot be health-checked on this worker: its mock backend has no health-check run',
      uartText: '',
    });
    await plain.worker.close();

    const server = new FakeServer();
    const backend = new HangingCheckBackend();
    const { worker, fake } = startWorker(server, { backend });
    server.queueTask({ kind: 'health-check', checkId: 'hc_hang', board: 'pico', timeoutMs: 5_000 });
    await vitestWaitFor(() => fake.countTimers() > 0);
    await fake.tickAsync(5_000);
    await server.finishedCount(1);
    expect(server.healthChecks.get('hc_hang')).toEqual({ passed: false, reason: 'health check on pico did not finish within 5 s (the mock backend was aborted)', uartText: '' });
    expect(backend.aborted).toBe(true);
    // The board was the check's meanwhile, and is free for jobs afterwards.
    server.queue('job_after', picoTestElf());
    await server.finishedCount(2);
    expect(server.outcomes.get('job_after')).toMatchObject({ state: 'done' });
    await worker.close();
  });

  it('fails a job whose firmware is missing or does not match its sha256, and one for a board it does not serve', async () => {
    const server = new FakeServer();
    const { worker } = startWorker(server);
    const elf = picoTestElf();
    server.tickets.push({ kind: 'job', jobId: 'job_missing', board: 'pico', firmwareSha256: 'f'.repeat(64), uartSeconds: 0.1, maxUartBytes: 10 });
    server.firmwareBySha.set('e'.repeat(64), elf);
    server.queue('job_corrupt', elf, { firmwareSha256: 'e'.repeat(64) });
    await server.finishedCount(2);
    expect(server.outcomes.get('job_missing')).toMatchObject({ state: 'failed', failure: { kind: 'internal', message: expect.stringMatching(/could not be fetched: 404/) } });
    expect(server.outcomes.get('job_corrupt')).toMatchObject({ failure: { kind: 'internal', message: expect.stringMatching(/is corrupted \(sha256 [0-9a-f]{64}, expected e{64}\)/) } });
    await worker.close();

    const other = new FakeServer();
    const stranger = new BenchWorker({
      clock: clockFromFakeTimers(createClock(0)),
      link: other.link,
      boards: ['pico'],
      boardFor: () => undefined,
      logError: () => undefined,
    });
    stranger.start();
    other.queue('job_gone', elf);
    await other.finishedCount(1);
    expect(other.outcomes.get('job_gone')).toMatchObject({ failure: { kind: 'unavailable', message: 'board pico is not served by this worker any more' } });
    await stranger.close();
  });

  it('asks again, on its clock and with a growing pause, when the server cannot be reached', async () => {
    const server = new FakeServer();
    server.claimFailures = 2;
    const { worker, fake, errors } = startWorker(server);
    await vitestWaitFor(() => errors.length === 1);
    expect(errors[0]).toBe('claiming a job failed; asking again in 1000 ms');
    await fake.tickAsync(1_000);
    await vitestWaitFor(() => errors.length === 2);
    expect(errors[1]).toBe('claiming a job failed; asking again in 2000 ms');
    await fake.tickAsync(2_000);
    server.queue('job_late', picoTestElf());
    await server.finishedCount(1);
    await worker.close();
  });

  it('never throws away a claim in flight: a pool of two whose next job becomes claimable as the last one ends runs every job (the lost jobs of two replicas)', async () => {
    const server = new FakeServer();
    // As over HTTP: a claim the worker aborted answers nothing, even when the server had already
    // handed out a job on it (it claimed before it saw the connection close). Such a job is lost.
    const handedOutOnAbort: string[] = [];
    let jobLost: () => void = () => undefined;
    const lostOne = new Promise<void>((resolve) => (jobLost = resolve));
    const link: WorkerLink = {
      ...server.link,
      claim: async (boards, signal) => {
        const task = await server.link.claim(boards, signal);
        if (task && signal.aborted) {
          handedOutOnAbort.push(task.kind === 'job' ? task.jobId : task.checkId);
          jobLost();
          return undefined;
        }
        return task;
      },
      // The jobs of one session: the next becomes claimable when the one before ends (its instance
      // is free again); the server's waiting claim hears of it a moment later (its look at the store).
      finish: async (jobId, outcome) => {
        await server.link.finish(jobId, outcome);
        const next = Number(jobId.slice('job_'.length)) + 1;
        if (next > 3) return;
        const firmware = picoTestElf();
        server.firmwareBySha.set(sha256(firmware), firmware);
        server.tickets.push({ kind: 'job', jobId: `job_${next}`, board: 'pico', instance: 'pico.1@w', firmwareSha256: sha256(firmware), uartSeconds: 0.35, maxUartBytes: 4096 });
        setImmediate(() => server.queueTask(server.tickets.pop()!));
      },
    };
    const { worker } = startWorker(server, { link, poolSize: 2 });
    server.queue('job_1', picoTestElf(), { instance: 'pico.1@w' });
    // Whichever comes first: every outcome, or a job handed out on a claim the worker threw away.
    await Promise.race([server.finishedCount(3), lostOne]);
    expect(handedOutOnAbort, 'jobs handed out on an aborted claim, never run').toEqual([]);
    expect([...server.outcomes.keys()]).toEqual(['job_1', 'job_2', 'job_3']);
    expect([...server.outcomes.values()].map((o) => o.state)).toEqual(['done', 'done', 'done']);
    await worker.close();
  });

  it('allowed one claim per board, keeps a claim on every board that frees while claims on other boards wait unanswered (two replicas, decision 0640)', async () => {
    const server = new FakeServer();
    // Claims answered only by the test: like the claims of a replica's worker on boards whose jobs
    // are queued through the other replica, nothing here wakes them.
    const open: Array<{ boards: readonly string[]; answer: (task: WorkerTask | undefined) => void }> = [];
    const link: WorkerLink = {
      ...server.link,
      claim: (boards, signal) =>
        new Promise((resolve) => {
          open.push({ boards, answer: resolve });
          signal.addEventListener('abort', () => resolve(undefined), { once: true });
        }),
    };
    const firmware = picoTestElf();
    server.firmwareBySha.set(sha256(firmware), firmware);
    const boards = ['a', 'b', 'c', 'd'];
    const worker = new BenchWorker({
      clock: clockFromFakeTimers(createClock(0)),
      link,
      boards,
      maxClaimsInFlight: boards.length,
      boardFor: () => ({ board: pico, backend: new MockBackend() }),
      logError: () => undefined,
    });
    const settled = () => new Promise<void>((resolve) => setImmediate(resolve));
    /** Answers the open claim covering `board` with a job on it. */
    const hand = (board: string) => {
      const index = open.findIndex((c) => c.boards.includes(board));
      expect(index, `an open claim covers ${board}`).toBeGreaterThanOrEqual(0);
      open.splice(index, 1)[0]!.answer({ kind: 'job', jobId: `job_${board}`, board, firmwareSha256: sha256(firmware), uartSeconds: 0.35, maxUartBytes: 4096 });
    };
    worker.start();
    // Jobs on a, b and c, each taken by the claim made after the one before: one claim is left, on d.
    for (const board of ['a', 'b', 'c']) {
      await settled();
      hand(board);
    }
    await server.finishedCount(3);
    await worker.idle();
    await settled();
    // a, b and c are free again: each has a claim, besides the one on d that nothing answered.
    expect(new Set(open.flatMap((c) => c.boards))).toEqual(new Set(boards));
    await worker.close();
  });

  it('on close, stops its running job without reporting an outcome (the server fails it as interrupted)', async () => {
    const server = new FakeServer();
    const { worker } = startWorker(server);
    server.queue('job_hang', picoTestElf({ fault: 'run-hang' }));
    await vitestWaitFor(() => server.reports.some(([, what]) => what === 'running'));
    await worker.close();
    expect(server.outcomes.size).toBe(0);
  });
});

/** Lets promise chains run until `check` holds (no clock time passes); fails after many turns. */
async function vitestWaitFor(check: () => boolean): Promise<void> {
  for (let turn = 0; turn < 5_000; turn++) {
    if (check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the condition did not hold after 5000 event-loop turns');
}
