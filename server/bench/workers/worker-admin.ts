import { createHash, randomBytes } from 'node:crypto';
import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import type { HealthCheckRecord } from '../../storage/bench/health-check-store.js';
import type { WorkerRecord } from '../../storage/bench/worker-registry.js';
import { newId } from '../domain/bench-deps.js';
import { BenchError } from '../domain/bench-errors.js';
import { WORKER_TOKEN_PREFIX } from './worker-token-format.js';


/**
 * What a worker inside a bench service's own process holds instead of a token hash: no SHA-256
 * (64 hex digits) ever equals it, so no token authenticates as it.
 */
const IN_PROCESS_MARK = 'in-process:';

const sha256Hex = (data: string) => createHash('sha256').update(data).digest('hex');

export interface WorkerAdminDeps {
  clock: Clock;
  store: BenchStore;
  /** Host ms without a heartbeat after which a worker and its boards count as offline. */
  workerOfflineAfterMs: number;
  /** Told that a worker's row changed through this process (created, revoked): the roster reads the store again. */
  onWorkersChanged?: () => void;
  /** Told the jobs a revocation failed, so live readers and waiting claims hear of them at once. */
  onJobsReleased?: (jobs: readonly JobRecord[]) => void;
  /** Told the health checks a revocation failed, so the administrator waiting for one hears at once. */
  onHealthChecksEnded?: (checks: readonly HealthCheckRecord[]) => void;
}

/** A worker as an administrator reads it (`GET /admin/workers`). */
export interface WorkerView {
  worker_id: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
  last_seen_at: string | null;
  online: boolean;
  boards: Array<{ board: string; backend: string; available: boolean; reason: string | null }>;
}

/**
 * Bench workers as credentials (issue 10): an administrator creates one (its token shown once,
 * kept only as a hash), lists and revokes them; a worker request is authenticated here. A
 * revoked worker's running jobs fail as `interrupted` at once, and its health checks (requested
 * or running) fail: their results could never be accepted, and each would hold its board.
 */
export class WorkerAdmin {
  constructor(private readonly deps: WorkerAdminDeps) {}

  async create(label: string): Promise<WorkerView & { token: string }> {
    const token = `${WORKER_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const worker = { workerId: newId('wk'), label, tokenSha256: sha256Hex(token), createdAtMs: this.deps.clock.nowMs() };
    await this.deps.store.workers.insert(worker);
    this.deps.onWorkersChanged?.();
    return { ...this.view({ ...worker, revokedAtMs: null, lastSeenAtMs: null, boards: [] }), token };
  }

  /**
   * The record of the worker in a bench service's own process (decision 0460), created at its first
   * start: it reports its boards into the store as remote workers do, but has no token.
   */
  async inProcess(workerId: string, label: string): Promise<WorkerRecord> {
    const known = await this.deps.store.workers.get(workerId);
    if (known) return known;
    await this.deps.store.workers.insert({ workerId, label, tokenSha256: `${IN_PROCESS_MARK}${workerId}`, createdAtMs: this.deps.clock.nowMs() });
    this.deps.onWorkersChanged?.();
    return (await this.deps.store.workers.get(workerId))!;
  }

  async list(): Promise<WorkerView[]> {
    return (await this.deps.store.workers.list()).map((w) => this.view(w));
  }

  async revoke(workerId: string): Promise<WorkerView> {
    const nowMs = this.deps.clock.nowMs();
    if ((await this.deps.store.workers.get(workerId))?.tokenSha256.startsWith(IN_PROCESS_MARK)) {
      throw new BenchError('worker_not_revocable', `worker ${workerId} runs inside a bench service and has no token to revoke: stop that service (or start it with --no-local-worker) instead`);
    }
    const worker = await this.deps.store.workers.revoke(workerId, nowMs);
    if (!worker) throw new BenchError('worker_not_found', `worker ${workerId} not found`);
    this.deps.onWorkersChanged?.();
    const reason = `worker ${workerId} (${worker.label}) was revoked by an administrator`;
    const released = await this.deps.store.releaseWorkerJobs(workerId, { reason, nowMs });
    this.deps.onJobsReleased?.(released);
    // After the revocation is stored: a claim it waits in can no longer take a check that is still requested.
    const checks = await this.deps.store.healthChecks.failAllOf(workerId, { reason: `${reason} before it reported this health check`, nowMs });
    this.deps.onHealthChecksEnded?.(checks);
    return this.view(worker);
  }

  /** The worker an `authorization` header names; refused with a reason otherwise (never an agent's token). */
  async authenticate(header: string | undefined): Promise<WorkerRecord> {
    if (header === undefined || header.trim() === '') {
      throw new BenchError('not_authenticated', 'Not authenticated: a worker sends "authorization: Bearer hbw_..." (an administrator creates one with POST /admin/workers)');
    }
    const match = /^Bearer ([A-Za-z0-9_-]+)$/i.exec(header.trim());
    if (!match || !match[1]!.startsWith(WORKER_TOKEN_PREFIX)) {
      throw new BenchError('invalid_authorization_header', 'Invalid authorization header: expected "Bearer hbw_..." (a worker token; agent tokens do not work here)');
    }
    const worker = await this.deps.store.workers.findByTokenSha256(sha256Hex(match[1]!));
    if (!worker) throw new BenchError('invalid_worker_token', 'Invalid worker token: no worker has this token');
    if (worker.revokedAtMs !== null) throw new BenchError('worker_revoked', `worker ${worker.workerId} was revoked at ${isoFromMs(worker.revokedAtMs)}`);
    return worker;
  }

  /** Whether the worker was heard from within the offline window as of `nowMs`. */
  isOnline(worker: WorkerRecord, nowMs: number): boolean {
    return worker.revokedAtMs === null && worker.lastSeenAtMs !== null && nowMs - worker.lastSeenAtMs < this.deps.workerOfflineAfterMs;
  }

  private view(w: WorkerRecord): WorkerView {
    return {
      worker_id: w.workerId,
      label: w.label,
      created_at: isoFromMs(w.createdAtMs),
      revoked_at: w.revokedAtMs === null ? null : isoFromMs(w.revokedAtMs),
      last_seen_at: w.lastSeenAtMs === null ? null : isoFromMs(w.lastSeenAtMs),
      online: this.isOnline(w, this.deps.clock.nowMs()),
      boards: w.boards.map(({ board, backend, available, reason }) => ({ board, backend, available, reason })),
    };
  }
}
