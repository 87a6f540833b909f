import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../../core/clock.js';
import { isFinishedJobState } from '../../wire/job-states.js';
import type { Logger } from '../http/logger.js';
import type { BenchStore } from '../storage/bench/bench-store.js';
import type { JobLive } from './domain/job-live.js';

/**
 * The bench service's Prometheus metrics (`GET /metrics`), in a registry of its own (a process may
 * hold several services, as tests do). What must agree on every replica (jobs by state, queue
 * depth, leases, workers) is read from the store when scraped; what happens in this process (job
 * durations, finished jobs) is counted as it happens, so each replica reports its own share.
 */
export function benchMetrics(deps: { clock: Clock; store: BenchStore; live: JobLive; logger: Logger; workerOfflineAfterMs: number }): {
  registry: Registry;
  stop: () => void;
} {
  const registry = new Registry();
  const { store } = deps;

  new Gauge({
    name: 'hilbench_jobs',
    help: 'Jobs in the store by state (all replicas).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const counts = await store.counts();
      for (const [state, n] of Object.entries(counts.jobsByState)) this.set({ state }, n);
    },
  });
  new Gauge({
    name: 'hilbench_board_jobs',
    help: 'Jobs waiting (queued) and active (flashing or running) per board: the queue depth.',
    labelNames: ['board', 'phase'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [board, a] of await store.boardActivity()) {
        this.set({ board, phase: 'queued' }, a.queued);
        this.set({ board, phase: 'active' }, a.active);
      }
    },
  });
  new Gauge({
    name: 'hilbench_leases',
    help: 'Boards held, by holder kind (a session, or a job that took a lease of its own).',
    labelNames: ['holder'] as const,
    registers: [registry],
    async collect() {
      const leases = await store.listLeases(deps.clock.nowMs());
      this.set({ holder: 'session' }, leases.filter((l) => l.holder.kind === 'session').length);
      this.set({ holder: 'job' }, leases.filter((l) => l.holder.kind === 'job').length);
    },
  });
  new Gauge({
    name: 'hilbench_agents',
    help: 'Registered agents.',
    registers: [registry],
    async collect() {
      this.set((await store.counts()).agents);
    },
  });
  // Each gauge reads the workers itself: a gauge set from another's collect would be written out
  // before that collect ran, one scrape late.
  const liveWorkers = async () => (await store.workers.list()).filter((w) => w.revokedAtMs === null);
  new Gauge({
    name: 'hilbench_worker_online',
    help: '1 while a bench worker is heard from within its offline window, else 0 (revoked workers are left out).',
    labelNames: ['worker', 'label'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const nowMs = deps.clock.nowMs();
      for (const w of await liveWorkers()) {
        this.set({ worker: w.workerId, label: w.label }, w.lastSeenAtMs !== null && nowMs - w.lastSeenAtMs < deps.workerOfflineAfterMs ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: 'hilbench_worker_last_heartbeat_timestamp_seconds',
    help: 'When each bench worker was last heard from (Unix seconds).',
    labelNames: ['worker', 'label'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const w of await liveWorkers()) if (w.lastSeenAtMs !== null) this.set({ worker: w.workerId, label: w.label }, w.lastSeenAtMs / 1000);
    },
  });

  const finished = new Counter({
    name: 'hilbench_jobs_finished_total',
    help: 'Jobs this replica saw finish, by board and state (done, failed) and failure kind.',
    labelNames: ['board', 'state', 'failure'] as const,
    registers: [registry],
  });
  const phaseSeconds = new Histogram({
    name: 'hilbench_job_phase_duration_seconds',
    help: 'Host seconds a finished job spent flashing and running, by board.',
    labelNames: ['board', 'phase'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const stop = deps.live.subscribeAll((jobId, event) => {
    if (event.kind !== 'state' || !isFinishedJobState(event.state)) return;
    void (event.job ? Promise.resolve(event.job) : store.getJob(jobId)).then(
      (job) => {
        if (!job) return;
        finished.inc({ board: job.board, state: job.state, failure: job.failure?.kind ?? '' });
        if (job.flashMs !== null) phaseSeconds.observe({ board: job.board, phase: 'flash' }, job.flashMs / 1000);
        if (job.runMs !== null) phaseSeconds.observe({ board: job.board, phase: 'run' }, job.runMs / 1000);
      },
      (err: unknown) => deps.logger.error(`metrics: reading finished job ${jobId}`, err),
    );
  });
  return { registry, stop };
}

/** `GET /metrics` in the OpenAPI document: served beside the API, not one of its JSON routes. */
export const metricsOpenApiPath = {
  '/metrics': {
    get: {
      tags: ['status'],
      summary: 'Prometheus metrics: jobs by state, queue depth per board, leases, workers and their last heartbeat, HTTP requests by route and status, connections open, closed for room and refused at the connection cap',
      description: 'Open unless the server has a metrics token (`--metrics-token`); then `authorization: Bearer <metrics token>`. See docs/deployment.md.',
      operationId: 'metrics',
      responses: { '200': { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
  },
};
