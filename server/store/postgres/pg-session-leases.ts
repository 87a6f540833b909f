import { isoFromMs } from '../../../core/clock.js';
import { instanceField, type LeaseWithAgent, type SessionRecord } from '../bench-store.js';
import { type LeaseRow, type SessionRow, sessionFromRow } from '../sqlite-bench-rows.js';
import type { Query } from './pg-database.js';

/**
 * The session and lease rules of the PostgreSQL store, as the SQLite store keeps them
 * (sqlite-session-leases.ts, decision 0211): expiry, closing a session, and how a session or lease
 * looks at a time while one of its jobs is unfinished. Writers run inside `PgDatabase.write`, one short transaction each.
 */

const UNFINISHED_JOB_STATES = "('queued', 'flashing', 'running')";

export const idleMs = (idleSeconds: number) => Math.round(idleSeconds * 1000);

const LEASE_SELECT = `SELECT l.instance, l.board, l.holder_kind, l.holder_id, l.agent_id, a.label AS agent_label, s.expires_at_ms, s.idle_seconds
         FROM leases l JOIN agents a ON a.agent_id = l.agent_id
         LEFT JOIN sessions s ON l.holder_kind = 'session' AND s.session_id = l.holder_id`;

/**
 * Expires due sessions (none with an unfinished job) and closes them. The due rows are locked
 * first, in one order for every caller (so two sweeps cannot deadlock), and the expiring UPDATE is
 * a later statement: in READ COMMITTED it sees every job committed before the locks were granted,
 * so a job just submitted into a session keeps it alive, and a session another replica expired or
 * heartbeated meanwhile drops out. A session expires once, whoever sweeps.
 */
export async function expireDue(q: Query, nowMs: number): Promise<SessionRecord[]> {
  const locked = await q<{ session_id: string }>(
    "SELECT session_id FROM sessions WHERE state = 'active' AND expires_at_ms <= $1 ORDER BY expires_at_ms, seq FOR UPDATE",
    [nowMs],
  );
  if (locked.length === 0) return [];
  const due = await q<SessionRow & { seq: number }>(
    `UPDATE sessions s SET state = 'expired', ended_at_ms = s.expires_at_ms
     WHERE s.session_id = ANY($1::text[]) AND s.state = 'active' AND s.expires_at_ms <= $2
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.session_id = s.session_id AND j.state IN ${UNFINISHED_JOB_STATES})
     RETURNING s.*`,
    [locked.map((r) => r.session_id), nowMs],
  );
  due.sort((a, b) => a.expires_at_ms - b.expires_at_ms || a.seq - b.seq);
  for (const row of due) await closeSession(q, row.session_id, 'expired', row.expires_at_ms);
  return due.map(sessionFromRow);
}

/**
 * Locks the row of `sessionId` until the transaction ends and returns it as committed now. Every
 * transaction that writes a session and its jobs locks the session first, then the jobs, so two
 * of them never wait on each other in a circle.
 */
export async function lockSession(q: Query, sessionId: string): Promise<SessionRow | undefined> {
  const [row] = await q<SessionRow>('SELECT * FROM sessions WHERE session_id = $1 FOR UPDATE', [sessionId]);
  return row;
}

/** A session that just ended or expired: queued jobs cancelled, running ones asked to stop and handed its lease. */
export async function closeSession(q: Query, sessionId: string, how: 'ended' | 'expired', atMs: number): Promise<void> {
  await q(
    `UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = $1, finished_at_ms = $2
     WHERE session_id = $3 AND state = 'queued'`,
    [`cancelled before it started: session ${sessionId} ${how} at ${isoFromMs(atMs)}`, atMs, sessionId],
  );
  const [active] = await q<{ job_id: string }>(
    "SELECT job_id FROM jobs WHERE session_id = $1 AND state IN ('flashing', 'running') ORDER BY created_at_ms, seq LIMIT 1",
    [sessionId],
  );
  await q("UPDATE jobs SET cancel_reason = $1 WHERE session_id = $2 AND state IN ('flashing', 'running') AND cancel_reason IS NULL", [
    `session ${sessionId} ${how} at ${isoFromMs(atMs)}`,
    sessionId,
  ]);
  if (active) {
    await q("UPDATE leases SET holder_kind = 'job', holder_id = $1 WHERE holder_kind = 'session' AND holder_id = $2", [active.job_id, sessionId]);
  } else {
    await q("DELETE FROM leases WHERE holder_kind = 'session' AND holder_id = $1", [sessionId]);
  }
}

async function hasUnfinishedJob(q: Query, sessionId: string): Promise<boolean> {
  const rows = await q(`SELECT 1 AS one FROM jobs WHERE session_id = $1 AND state IN ${UNFINISHED_JOB_STATES} LIMIT 1`, [sessionId]);
  return rows.length > 0;
}

/** A session as agents see it at `nowMs` while one of its jobs is unfinished. */
export async function inUse(q: Query, session: SessionRecord, nowMs: number): Promise<SessionRecord> {
  if (session.state !== 'active' || !(await hasUnfinishedJob(q, session.sessionId))) return session;
  return { ...session, expiresAtMs: Math.max(session.expiresAtMs, nowMs + idleMs(session.idleSeconds)) };
}

/** A session as it stands at `nowMs`, without writing. */
export async function asOf(q: Query, session: SessionRecord, nowMs: number): Promise<SessionRecord> {
  const seen = await inUse(q, session, nowMs);
  if (seen.state !== 'active' || seen.expiresAtMs > nowMs) return seen;
  return { ...seen, state: 'expired', endedAtMs: seen.expiresAtMs };
}

/** A job of `sessionId` just finished: the session's idle time starts again from `nowMs`. */
export async function renewAfterJob(q: Query, sessionId: string | null, nowMs: number): Promise<void> {
  if (sessionId === null) return;
  const [row] = await q<{ idle_seconds: number }>("SELECT idle_seconds FROM sessions WHERE session_id = $1 AND state = 'active'", [sessionId]);
  if (!row) return;
  await q('UPDATE sessions SET expires_at_ms = GREATEST(expires_at_ms, $1) WHERE session_id = $2', [nowMs + idleMs(row.idle_seconds), sessionId]);
}

/** The lease on `instance` (a board's id for a pool of one), if any, as it stands at `nowMs`. */
export async function leaseOn(q: Query, instance: string, nowMs: number): Promise<LeaseWithAgent | undefined> {
  const [row] = await q<LeaseRow>(`${LEASE_SELECT} WHERE l.instance = $1`, [instance]);
  return row && leaseFromRow(q, row, nowMs);
}

/**
 * The first of `instances` nobody leases at `nowMs`, or the lease that frees first when every one
 * is leased (as sqlite-session-leases.ts). The caller holds its pool's advisory lock (`lockBoard`),
 * so no other writer takes one of them meanwhile; the lease's primary key backs that up.
 */
export async function firstFree(q: Query, instances: readonly string[], nowMs: number): Promise<{ free: string } | { lease: LeaseWithAgent }> {
  const leases: LeaseWithAgent[] = [];
  for (const instance of instances) {
    const lease = await leaseOn(q, instance, nowMs);
    if (!lease) return { free: instance };
    leases.push(lease);
  }
  const freesAt = (l: LeaseWithAgent) => l.expiresAtMs ?? Number.POSITIVE_INFINITY;
  return { lease: leases.reduce((best, l) => (freesAt(l) < freesAt(best) ? l : best)) };
}

export async function listLeasesAsOf(q: Query, nowMs: number): Promise<LeaseWithAgent[]> {
  const rows = await q<LeaseRow>(`${LEASE_SELECT} ORDER BY l.board, l.instance`);
  const leases = await Promise.all(rows.map((row) => leaseFromRow(q, row, nowMs)));
  return leases.filter((l) => !(l.holder.kind === 'session' && l.expiresAtMs! <= nowMs));
}

async function leaseFromRow(q: Query, r: LeaseRow, nowMs: number): Promise<LeaseWithAgent> {
  if (r.holder_kind === 'job') {
    return { board: r.board, ...instanceField(r.board, r.instance), holder: { kind: 'job', jobId: r.holder_id }, agentId: r.agent_id, agentLabel: r.agent_label, expiresAtMs: null };
  }
  const storedMs = r.expires_at_ms ?? 0;
  const expiresAtMs = r.idle_seconds !== null && (await hasUnfinishedJob(q, r.holder_id)) ? Math.max(storedMs, nowMs + idleMs(r.idle_seconds)) : storedMs;
  return { board: r.board, ...instanceField(r.board, r.instance), holder: { kind: 'session', sessionId: r.holder_id }, agentId: r.agent_id, agentLabel: r.agent_label, expiresAtMs };
}
