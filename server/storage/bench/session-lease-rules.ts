import { isoFromMs } from '../../../core/clock.js';
import { instanceField, type LeaseWithAgent, type SessionRecord } from './bench-store.js';
import { type LeaseRow, type SessionRow, sessionFromRow } from './bench-rows.js';
import type { Dialect } from './sql/dialect.js';
import { all, one, run, type Steps } from '../sql-steps.js';

/**
 * The session and lease rules of the bench store, once for both databases (decision 0545):
 * expiry, closing a session, and how a session or lease looks at a given time while one of its
 * jobs is unfinished (decision 0211). Steps that write run inside the caller's transaction.
 * Locks are taken session first, then job, then lease, so two PostgreSQL transactions never wait
 * on each other in a circle (SQLite has one writer at a time).
 */

/** Job states in which a job still uses its session's lease: it keeps the session alive (decision 0211). */
const UNFINISHED_JOB_STATES = "('queued', 'flashing', 'running')";

/** A session's idle time in host milliseconds, rounded as everywhere a lease is renewed. */
export const idleMs = (idleSeconds: number) => Math.round(idleSeconds * 1000);

/** The lease columns with the holder's agent label and, for a session holder, its expiry. */
const LEASE_SELECT = `SELECT l.instance, l.board, l.holder_kind, l.holder_id, l.agent_id, a.label AS agent_label, s.expires_at_ms, s.idle_seconds
         FROM leases l JOIN agents a ON a.agent_id = l.agent_id
         LEFT JOIN sessions s ON l.holder_kind = 'session' AND s.session_id = l.holder_id`;

/** Takes the pool's lock where the dialect has one (PostgreSQL's per-board advisory lock). */
export function* lockPool(d: Dialect, board: string): Steps<void> {
  const lock = d.poolLock(board);
  if (lock) yield* one(lock.sql, lock.params);
}

/**
 * `lockPool`, answering when the administrator's health check holding `board` (requested or
 * running) was requested, or null: on PostgreSQL in the lock's own statement (decision 0860; it
 * was a read of every active check before each job), on SQLite a statement in its transaction.
 */
export function* lockPoolSeeingCheck(d: Dialect, board: string): Steps<number | null> {
  const check = "(SELECT MIN(requested_at_ms) FROM board_health_checks WHERE board = ? AND state IN ('requested', 'running'))";
  const lock = d.poolLock(board);
  const row = lock ? yield* one<{ since: number | null }>(`${lock.sql}, ${check} AS since`, [...lock.params, board]) : yield* one<{ since: number | null }>(`SELECT ${check} AS since`, [board]);
  return row?.since ?? null;
}

/**
 * Expires due sessions (none with an unfinished job) and closes them. The due rows are locked
 * first, in one order for every caller (so two sweeps cannot deadlock), and the expiring UPDATE is
 * a later statement: in PostgreSQL's READ COMMITTED it sees every job committed before the locks
 * were granted, so a job just submitted into a session keeps it alive, and a session another
 * replica expired or heartbeated meanwhile drops out. A session expires once, whoever sweeps.
 */
export function* expireDue(d: Dialect, nowMs: number): Steps<SessionRecord[]> {
  const locked = yield* all<{ session_id: string }>(
    `SELECT session_id FROM sessions WHERE state = 'active' AND expires_at_ms <= ? ORDER BY expires_at_ms, ${d.seq}${d.forUpdate}`,
    [nowMs],
  );
  if (locked.length === 0) return [];
  const expired = yield* all<SessionRow>(
    `UPDATE sessions SET state = 'expired', ended_at_ms = expires_at_ms
     WHERE ${d.inList('session_id')} AND state = 'active' AND expires_at_ms <= ?
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.session_id = sessions.session_id AND j.state IN ${UNFINISHED_JOB_STATES})
     RETURNING *`,
    [d.listParam(locked.map((r) => r.session_id)), nowMs],
  );
  // In the order they were due (the order of the locks).
  const byId = new Map(expired.map((row) => [row.session_id, row]));
  const due = locked.flatMap((r) => byId.get(r.session_id) ?? []);
  for (const row of due) yield* closeSession(row.session_id, 'expired', row.expires_at_ms);
  return due.map(sessionFromRow);
}

/**
 * The row of `sessionId` as committed now, locked until the transaction ends where the dialect
 * locks rows. Every transaction that writes a session and its jobs locks the session first.
 */
export function* lockSession(d: Dialect, sessionId: string): Steps<SessionRow | undefined> {
  return yield* one<SessionRow>(`SELECT * FROM sessions WHERE session_id = ?${d.forUpdate}`, [sessionId]);
}

/**
 * For a session that just ended or expired: its queued jobs are failed as `cancelled` (they must
 * not run under the next holder's lease), and its lease is released only when none of its jobs is
 * flashing or running. Otherwise the lease passes to that job, so the board stays held until it
 * finishes (`finishJob` frees it), and the job is asked to stop (`cancel_reason`): its worker hears
 * it on its next claim renewal. An arming for debugging nobody used is dropped with it (decision 0810).
 */
export function* closeSession(sessionId: string, how: 'ended' | 'expired', atMs: number): Steps<void> {
  yield* run('DELETE FROM debug_armings WHERE session_id = ?', [sessionId]);
  yield* run(
    `UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = ?, finished_at_ms = ?
     WHERE session_id = ? AND state = 'queued'`,
    [`cancelled before it started: session ${sessionId} ${how} at ${isoFromMs(atMs)}`, atMs, sessionId],
  );
  // Asked to stop, and the first of them (by creation) takes the lease.
  const asked = yield* all<{ job_id: string; created_at_ms: number }>(
    `UPDATE jobs SET cancel_reason = COALESCE(cancel_reason, ?) WHERE session_id = ? AND state IN ('flashing', 'running') RETURNING job_id, created_at_ms`,
    [`session ${sessionId} ${how} at ${isoFromMs(atMs)}`, sessionId],
  );
  const active = asked.sort((a, b) => a.created_at_ms - b.created_at_ms)[0];
  if (active) {
    yield* run("UPDATE leases SET holder_kind = 'job', holder_id = ? WHERE holder_kind = 'session' AND holder_id = ?", [active.job_id, sessionId]);
  } else {
    yield* run("DELETE FROM leases WHERE holder_kind = 'session' AND holder_id = ?", [sessionId]);
  }
}

/** Whether one of the session's jobs is queued, flashing or running: then the session is in use and does not expire. */
function* hasUnfinishedJob(sessionId: string): Steps<boolean> {
  return (yield* one(`SELECT 1 AS one FROM jobs WHERE session_id = ? AND state IN ${UNFINISHED_JOB_STATES} LIMIT 1`, [sessionId])) !== undefined;
}

/**
 * A session as agents see it at `nowMs`: while one of its jobs is unfinished the session is in
 * use, as if it heartbeated all along, so it expires no earlier than `nowMs + idle` (the stored
 * expiry is renewed for real when that job finishes, `renewAfterJob`).
 */
export function* inUse(session: SessionRecord, nowMs: number): Steps<SessionRecord> {
  if (session.state !== 'active' || !(yield* hasUnfinishedJob(session.sessionId))) return session;
  return { ...session, expiresAtMs: Math.max(session.expiresAtMs, nowMs + idleMs(session.idleSeconds)) };
}

/**
 * A session as it stands at `nowMs`, without writing: one due then (`expireDue` would expire it)
 * is shown expired at its `expiresAtMs`, exactly as the sweep will record it.
 */
export function* asOf(session: SessionRecord, nowMs: number): Steps<SessionRecord> {
  const seen = yield* inUse(session, nowMs);
  if (seen.state !== 'active' || seen.expiresAtMs > nowMs) return seen;
  return { ...seen, state: 'expired', endedAtMs: seen.expiresAtMs };
}

/**
 * A job of `sessionId` just finished (done, failed, interrupted): its session's idle time starts
 * again from `nowMs`, exactly as a heartbeat would (the expiry never moves earlier).
 */
export function* renewAfterJob(d: Dialect, sessionId: string | null, nowMs: number): Steps<void> {
  if (sessionId === null) return;
  // `idleMs` in SQL: rounded half away from zero, as Math.round rounds a positive time.
  yield* run(`UPDATE sessions SET expires_at_ms = ${d.greatest}(expires_at_ms, ? + CAST(ROUND(CAST(idle_seconds * 1000 AS NUMERIC)) AS BIGINT)) WHERE session_id = ? AND state = 'active'`, [
    nowMs,
    sessionId,
  ]);
}

/** The lease on `instance` (a board's id for a pool of one), if any, as it stands at `nowMs`. */
export function* leaseOn(instance: string, nowMs: number): Steps<LeaseWithAgent | undefined> {
  const row = yield* one<LeaseRow>(`${LEASE_SELECT} WHERE l.instance = ?`, [instance]);
  return row && (yield* leaseFromRow(row, nowMs));
}

/**
 * The first of `instances` nobody leases at `nowMs`, or the lease that frees first when every one
 * is leased (a job's lease last: it frees only when its job ends), and whether a session due at
 * `nowMs` holds one of them (expiring it frees the instance). Inside the caller's
 * transaction, which holds the pool's lock (`lockPool`) and then takes the free one (decision
 * 0510); the lease's primary key backs that up.
 */
export function* firstFree(instances: readonly string[], nowMs: number): Steps<{ free: string } | { lease: LeaseWithAgent; dueSession: boolean }> {
  const leases: LeaseWithAgent[] = [];
  for (const instance of instances) {
    const lease = yield* leaseOn(instance, nowMs);
    if (!lease) return { free: instance };
    leases.push(lease);
  }
  const freesAt = (l: LeaseWithAgent) => l.expiresAtMs ?? Number.POSITIVE_INFINITY;
  // A session lease due at `nowMs` (the idle time of one in use is already extended) is held by
  // a session that `expireDue` would expire now.
  const dueSession = leases.some((l) => l.holder.kind === 'session' && freesAt(l) <= nowMs);
  return { lease: leases.reduce((best, l) => (freesAt(l) < freesAt(best) ? l : best)), dueSession };
}

/** Every lease as it stands at `nowMs`, by board; a session lease due then is left out. */
export function* listLeasesAsOf(nowMs: number): Steps<LeaseWithAgent[]> {
  const rows = yield* all<LeaseRow>(`${LEASE_SELECT} ORDER BY l.board, l.instance`);
  const leases: LeaseWithAgent[] = [];
  for (const row of rows) leases.push(yield* leaseFromRow(row, nowMs));
  // A session lease due at `nowMs` is as good as freed: the sweep frees it without a job to pass it to.
  return leases.filter((l) => !(l.holder.kind === 'session' && l.expiresAtMs! <= nowMs));
}

function* leaseFromRow(r: LeaseRow, nowMs: number): Steps<LeaseWithAgent> {
  const common = { board: r.board, ...instanceField(r.board, r.instance), agentId: r.agent_id, agentLabel: r.agent_label };
  if (r.holder_kind === 'job') return { ...common, holder: { kind: 'job', jobId: r.holder_id }, expiresAtMs: null };
  const storedMs = r.expires_at_ms ?? 0;
  const expiresAtMs = r.idle_seconds !== null && (yield* hasUnfinishedJob(r.holder_id)) ? Math.max(storedMs, nowMs + idleMs(r.idle_seconds)) : storedMs;
  return { ...common, holder: { kind: 'session', sessionId: r.holder_id }, expiresAtMs };
}
