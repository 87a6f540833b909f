import type { Clock } from '../../../core/clock.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import type { WorkerBoardReport, WorkerRecord } from '../../storage/bench/worker-registry.js';
import { BenchError } from './bench-errors.js';
import { InstanceHealth } from './instance-health.js';

/**
 * The instances of a pool, named in one place (decision 0510): a worker serving board `b` once
 * serves the instance `b` (a pool of one, exactly a board as before, shared by every worker that
 * serves `b` once); serving it `n > 1` times, the instances `b.1@w` … `b.n@w`.
 */
export function instanceIds(board: string, workerId: string, poolSize: number): string[] {
  if (poolSize <= 1) return [board];
  return Array.from({ length: poolSize }, (_, i) => `${board}.${i + 1}@${workerId}`);
}

/** The instances a worker's report of a board stands for. */
export function reportedInstances(workerId: string, report: WorkerBoardReport): string[] {
  return instanceIds(report.board, workerId, report.poolSize ?? 1);
}

/** The board an instance id names (`b.n@w` or `b` itself); undefined when it is not spelled as one. */
export function boardOfInstance(instance: string): string | undefined {
  const match = /^([a-z0-9][a-z0-9-]*)(?:\.[1-9]\d*@[^\s@]+)?$/.exec(instance);
  return match?.[1];
}

/** One instance of a pool as its workers report it (decision 0510). */
export interface PoolInstance {
  instance: string;
  board: string;
  /** The workers serving it (a pool of one served by several workers is one instance). */
  workers: Array<{ workerId: string; label: string; online: boolean; available: boolean; reason: string | null }>;
  /** Set while the instance is quarantined (an instance of a pool of several, decision 0551). */
  quarantine?: { sinceMs: number; reason: string };
}

/**
 * The instances of every pool, read from the workers' reports in the store, so every replica sees
 * the same pools. The store hands them out (leases keyed by instance); this only says which exist
 * and which may be handed out now.
 */
export class PoolInstances {
  constructor(
    private readonly deps: {
      clock: Clock;
      store: BenchStore;
      /** Every worker, as recently read (the workers' roster, decision 0860); default: the store's list. */
      listWorkers?: () => Promise<WorkerRecord[]>;
      /** Ends what `listWorkers` keeps up to date (the roster's hearing of the store), when the bench closes. */
      stopListing?: () => void;
      isOnline: (worker: WorkerRecord, nowMs: number) => boolean;
      /** The worker in this process: online while the process runs (remote-boards.ts). */
      selfWorkerId?: string;
    },
  ) {
    this.health = new InstanceHealth({ store: deps.store });
  }

  /** The bench closes: what keeps the workers' list up to date stops. */
  close(): void {
    this.deps.stopListing?.();
  }

  /** Health and quarantine of the instances of pools of several (decision 0551). */
  readonly health: InstanceHealth;

  /** Every instance of `board` some worker (not revoked) reports, online or not, workers oldest first. */
  async of(board: string): Promise<PoolInstance[]> {
    const nowMs = this.deps.clock.nowMs();
    const byId = new Map<string, PoolInstance>();
    for (const worker of await (this.deps.listWorkers ?? (() => this.deps.store.workers.list()))()) {
      if (worker.revokedAtMs !== null) continue;
      const online = worker.workerId === this.deps.selfWorkerId || this.deps.isOnline(worker, nowMs);
      for (const report of worker.boards.filter((r) => r.board === board)) {
        for (const instance of reportedInstances(worker.workerId, report)) {
          const entry = byId.get(instance) ?? { instance, board, workers: [] };
          entry.workers.push({ workerId: worker.workerId, label: worker.label, online, available: report.available, reason: report.reason });
          byId.set(instance, entry);
        }
      }
    }
    const instances = [...byId.values()];
    const quarantines = await this.health.quarantines(board, instances.map((i) => i.instance));
    return instances.map((i) => (quarantines.has(i.instance) ? { ...i, quarantine: quarantines.get(i.instance)! } : i));
  }

  /**
   * The instances of `board` to hand out now, in order: those an online worker reports available
   * and that are not quarantined. None such (a pool of one whose availability the caller already
   * checked, a board no worker reports in a pool): the board itself, exactly as before pools. Every
   * ready instance quarantined: `board_offline` naming them (nothing to hand out, nothing to wait for).
   */
  async handOut(board: string): Promise<string[]> {
    const ready = (await this.of(board)).filter((i) => i.workers.some((w) => w.online && w.available));
    const healthy = ready.filter((i) => !i.quarantine).map((i) => i.instance);
    if (ready.length > 0 && healthy.length === 0) {
      const which = ready.map((i) => `${i.instance} (${i.quarantine!.reason})`).join('; ');
      throw new BenchError('board_offline', `board ${board} is offline: every instance of its pool is quarantined: ${which}; an administrator releases one (POST /admin/boards/{instance}/release)`);
    }
    if (healthy.length === 0) return [board];
    // One candidate has no order to keep: no read of the checks (each job on a pool of one asked it, decision 0650).
    if (healthy.length === 1) return healthy;
    // An instance under an administrator's health check (decision 0606) goes last: a session that
    // still takes it waits for the check to end (no worker claims a job on it meanwhile).
    const checking = await this.checking();
    return [...healthy.filter((i) => !checking.has(i)), ...healthy.filter((i) => checking.has(i))];
  }

  /** The instances of pools of several under an administrator's health check now (decision 0606), on every replica. */
  async checking(): Promise<Set<string>> {
    return new Set((await this.deps.store.healthChecks.active()).map((c) => c.board).filter((id) => id.includes('@')));
  }

  /** Of `instances` (one worker's, for its claim), those not quarantined. */
  async unquarantined(board: string, instances: readonly string[]): Promise<string[]> {
    const quarantines = await this.health.quarantines(board, instances);
    return instances.filter((i) => !quarantines.has(i));
  }
}
