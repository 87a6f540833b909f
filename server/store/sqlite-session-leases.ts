import type Database from 'better-sqlite3';
import { instanceField, type LeaseWithAgent, type SessionRecord } from './bench-store.js';
import { isoFromMs } from '../../core/clock.js';
import { type LeaseRow, type SessionRow, sessionFromRow } from './sqlite-bench-rows.js';

/**
 * The session and lease rules of the SQLite bench store: expiry, closing a session, and how a
 * session or lease looks at a given time while one of its jobs is unfinished (decision 0211).
 * Functions that write run inside the caller's transaction.
 */

/** Job states in which a job still uses its session's lease: it keeps the session alive (decision 0211). */
const UNFINISHED_JOB_STATES = "('queued', 'flashing', 'running')";

/** A session's idle time in host milliseconds, rounded as everywhere a lease is renewed. */
export const idleMs = (idleSeconds: number) => Math.round(idleSeconds * 1000);

/** The lease columns with the holder's agent label and, for a session holder, its expiry. */
const LEASE_SELECT = `SELECT l.instance, l.board, l.holder_kind, l.holder_id, l.agent_id, a.label AS agent_label, s.expires_at_ms, s.idle_seconds
         FROM leases l JOIN agents a ON a.agent_id = l.agent_id
         LEFT JOIN sessions s ON l.holder_kind = 'session' AND s.session_id = l.holder_id`;

/** Runs inside a transaction: expires due sessions and releases their leases (`closeSession`). */
export function expireDue(db: Database.Database, nowMs: number): SessionRecord[] {
  // A session with a job queued or running is in use, however long ago its last heartbeat was.
  const due = db
    .prepare(
      `SELECT * FROM sessions s WHERE s.state = 'active' AND s.expires_at_ms <= ?
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.session_id = s.session_id AND j.state IN ${UNFINISHED_JOB_STATES})
       ORDER BY s.expires_at_ms`,
    )
    .all(nowMs) as SessionRow[];
  for (const row of due) {
    db.prepare("UPDATE sessions SET state = 'expired', ended_at_ms = expires_at_ms WHERE session_id = ?").run(row.session_id);
    closeSession(db, row.session_id, 'expired', row.expires_at_ms);
  }
  return due.map((row) => ({ ...sessionFromRow(row), state: 'expired' as const, endedAtMs: row.expires_at_ms }));
}

/**
 * Runs inside a transaction, for a session that just ended or expired: its queued jobs are
 * failed as `cancelled` (they must not run under the next holder's lease), and its lease is
 * released only when none of its jobs is flashing or running. Otherwise the lease passes to
 * that job, so the board stays held until it finishes (`finishJob` frees it), and the job is
 * asked to stop (`cancel_reason`): its worker hears it on its next claim renewal.
 */
export function closeSession(db: Database.Database, sessionId: string, how: 'ended' | 'expired', atMs: number): void {
  db.prepare(
    `UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = ?, finished_at_ms = ?
     WHERE session_id = ? AND state = 'queued'`,
  ).run(`cancelled before it started: session ${sessionId} ${how} at ${isoFromMs(atMs)}`, atMs, sessionId);
  const active = db
    .prepare("SELECT job_id FROM jobs WHERE session_id = ? AND state IN ('flashing', 'running') ORDER BY created_at_ms, rowid LIMIT 1")
    .get(sessionId) as { job_id: string } | undefined;
  db.prepare("UPDATE jobs SET cancel_reason = ? WHERE session_id = ? AND state IN ('flashing', 'running') AND cancel_reason IS NULL").run(
    `session ${sessionId} ${how} at ${isoFromMs(atMs)}`,
    sessionId,
  );
  if (active) {
    db.prepare("UPDATE leases SET holder_kind = 'job', holder_id = ? WHERE holder_kind = 'session' AND holder_id = ?").run(active.job_id, sessionId);
  } else {
    db.prepare("DELETE FROM leases WHERE holder_kind = 'session' AND holder_id = ?").run(sessionId);
  }
}

/**
 * Whether one of the session's jobs is queued, flashing or running: then the session is in use
 * and does not expire (decision 0211).
 */
function hasUnfinishedJob(db: Database.Database, sessionId: string): boolean {
  const row = db
    .prepare(`SELECT 1 AS one FROM jobs WHERE session_id = ? AND state IN ${UNFINISHED_JOB_STATES} LIMIT 1`)
    .get(sessionId) as { one: number } | undefined;
  return row !== undefined;
}

/**
 * A session as agents see it at `nowMs`: while one of its jobs is unfinished the session is in
 * use, as if it heartbeated all along, so it expires no earlier than `nowMs + idle` (the
 * stored expiry is renewed for real when that job finishes, `renewAfterJob`).
 */
export function inUse(db: Database.Database, session: SessionRecord, nowMs: number): SessionRecord {
  if (session.state !== 'active' || !hasUnfinishedJob(db, session.sessionId)) return session;
  return { ...session, expiresAtMs: Math.max(session.expiresAtMs, nowMs + idleMs(session.idleSeconds)) };
}

/**
 * A session as it stands at `nowMs`, without writing: one due then (`expireDue` would expire
 * it) is shown expired at its `expiresAtMs`, exactly as the sweep will record it.
 */
export function asOf(db: Database.Database, session: SessionRecord, nowMs: number): SessionRecord {
  const seen = inUse(db, session, nowMs);
  if (seen.state !== 'active' || seen.expiresAtMs > nowMs) return seen;
  return { ...seen, state: 'expired', endedAtMs: seen.expiresAtMs };
}

/**
 * A job of `sessionId` just finished (done, failed, interrupted): its session's idle time
 * starts again from `nowMs`, exactly as a heartbeat would (the expiry never moves earlier).
 */
export function renewAfterJob(db: Database.Database, sessionId: string | null, nowMs: number): void {
  if (sessionId === null) return;
  const row = db.prepare("SELECT idle_seconds FROM sessions WHERE session_id = ? AND state = 'active'").get(sessionId) as
    | { idle_seconds: number }
    | undefined;
  if (!row) return;
  db.prepare('UPDATE sessions SET expires_at_ms = MAX(expires_at_ms, ?) WHERE session_id = ?').run(nowMs + idleMs(row.idle_seconds), sessionId);
}

/** The lease on `instance` (a board's id for a pool of one), if any, as it stands at `nowMs`. */
export function leaseOn(db: Database.Database, instance: string, nowMs: number): LeaseWithAgent | undefined {
  const row = db.prepare(`${LEASE_SELECT}
         WHERE l.instance = ?`).get(instance) as LeaseRow | undefined;
  return row && leaseFromRow(db, row, nowMs);
}

/**
 * The first of `instances` nobody leases at `nowMs`, or the lease that frees first when every one
 * is leased (a job's lease last: it frees only when its job ends). Inside the caller's transaction,
 * which then takes the free one (decision 0510).
 */
export function firstFree(db: Database.Database, instances: readonly string[], nowMs: number): { free: string } | { lease: LeaseWithAgent } {
  const leases: LeaseWithAgent[] = [];
  for (const instance of instances) {
    const lease = leaseOn(db, instance, nowMs);
    if (!lease) return { free: instance };
    leases.push(lease);
  }
  const freesAt = (l: LeaseWithAgent) => l.expiresAtMs ?? Number.POSITIVE_INFINITY;
  return { lease: leases.reduce((best, l) => (freesAt(l) < freesAt(best) ? l : best)) };
}

/** Every lease as it stands at `nowMs`, by board; a session lease due then is left out. */
export function listLeasesAsOf(db: Database.Database, nowMs: number): LeaseWithAgent[] {
  const rows = db.prepare(`${LEASE_SELECT}
         ORDER BY l.board, l.instance`).all() as LeaseRow[];
  // A session lease due at `nowMs` is as good as freed: the sweep frees it without a job to pass it to.
  return rows.map((row) => leaseFromRow(db, row, nowMs)).filter((l) => !(l.holder.kind === 'session' && l.expiresAtMs! <= nowMs));
}

function leaseFromRow(db: Database.Database, r: LeaseRow, nowMs: number): LeaseWithAgent {
  if (r.holder_kind === 'job') {
    return { board: r.board, ...instanceField(r.board, r.instance), holder: { kind: 'job', jobId: r.holder_id }, agentId: r.agent_id, agentLabel: r.agent_label, expiresAtMs: null };
  }
  const storedMs = r.expires_at_ms ?? 0;
  const expiresAtMs =
    r.idle_seconds !== null && hasUnfinishedJob(db, r.holder_id) ? Math.max(storedMs, nowMs + idleMs(r.idle_seconds)) : storedMs;
  return { board: r.board, ...instanceField(r.board, r.instance), holder: { kind: 'session', sessionId: r.holder_id }, agentId: r.agent_id, agentLabel: r.agent_label, expiresAtMs };
}
