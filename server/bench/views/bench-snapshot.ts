import { isoFromMs } from '../../../core/clock.js';
import type { BenchOverview } from '../domain/bench-status.js';
import { BENCH_API_VERSION } from '../domain/bench-version.js';
import type { BoardStatus, PoolView } from '../domain/board-state.js';
import { snapshotBoard } from './board-views.js';

/**
 * What the human pages (`/`, `/stats`) and `GET /api/v1/stats` show: a read-only snapshot of the
 * bench, built from the domain's overview (`benchSnapshot` below). Nothing secret goes in here:
 * no tokens, no firmware bytes, no UART output; agents appear only by their public label.
 */
export interface BoardSnapshot {
  id: string;
  name: string;
  description: string;
  mcu: string;
  architecture: string;
  backend: string;
  status: BoardStatus;
  /** Why the board is offline (backend missing, quarantined), when it is. */
  offlineReason: string | null;
  /** Label of the agent holding the lease, when leased. */
  leasedBy: string | null;
  /** ISO 8601 time the current lease expires unless renewed. */
  leaseExpiresAt: string | null;
  queuedJobs: number;
  /** The instances of a board that is a pool of several (decision 0510); absent for a pool of one. */
  pool?: PoolView;
}

export interface ActivitySnapshot {
  /** Short public id of the job. */
  jobId: string;
  board: string;
  agentLabel: string;
  state: string;
  /** ISO 8601. */
  at: string;
}

export interface BenchSnapshot {
  /** ISO 8601 time the snapshot was taken (the injected clock's now). */
  generatedAt: string;
  version: string;
  boards: BoardSnapshot[];
  recentActivity: ActivitySnapshot[];
  totals: {
    agents: number;
    sessionsOpen: number;
    jobsTotal: number;
    jobsByState: Record<string, number>;
    waitlist: number;
  };
}

/** The snapshot of the bench's overview, as the pages and `GET /api/v1/stats` show it. */
export function benchSnapshot(overview: BenchOverview): BenchSnapshot {
  const { counts } = overview;
  return {
    generatedAt: isoFromMs(overview.nowMs),
    version: BENCH_API_VERSION,
    boards: overview.states.map(snapshotBoard),
    recentActivity: overview.recentJobs.map((j) => ({
      // A short prefix: enough to tell jobs apart on a public page, useless for fetching one.
      jobId: j.jobId.slice(0, 12),
      board: j.board,
      agentLabel: j.agentLabel,
      state: j.state,
      at: isoFromMs(j.finishedAtMs ?? j.startedAtMs ?? j.createdAtMs),
    })),
    totals: {
      agents: counts.agents,
      sessionsOpen: counts.sessionsOpen,
      jobsTotal: counts.jobsTotal,
      jobsByState: counts.jobsByState,
      waitlist: overview.waitlist,
    },
  };
}
