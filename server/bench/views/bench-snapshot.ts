import type { PoolView } from './board-views.js';
/**
 * What the human pages (`/`, `/stats`) and `GET /api/v1/stats` show: a read-only snapshot of the
 * bench, built by the bench service from its store and backends. Nothing secret goes in here:
 * no tokens, no firmware bytes, no UART output; agents appear only by their public label.
 */
export type BoardStatus = 'free' | 'leased' | 'busy' | 'offline';

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
