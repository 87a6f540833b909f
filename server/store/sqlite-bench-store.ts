import Database from 'better-sqlite3';
import type {
  AgentRecord,
  BenchStore,
  CreateJobResult,
  ElfSummary,
  JobOutcome,
  JobRecord,
  JobState,
  JobWithAgent,
  LeaseWithAgent,
  OpenSessionResult,
  SessionChangeResult,
  SessionRecord,
  SessionState,
  SessionWithAgent,
  StopRecord,
  StoreCounts,
  UartRecord,
} from './bench-store.js';
import { isoFromMs } from '../../core/clock.js';
import { BoardBusyError, jobStates } from './bench-store.js';
import { latestVersion } from '../db/run-migrations.js';
import { prepareOwnerOnlyDatabase } from '../lifecycle/private-files.js';
import { benchStoreMigrations, migrateBenchDatabase } from './bench-store-migrations.js';
import { SqliteQuarantineStore } from './sqlite-quarantine-store.js';
import { SqliteWaitlist } from './sqlite-waitlist.js';

/** Job states in which a job still uses its session's lease: it keeps the session alive (decision 0211). */
const UNFINISHED_JOB_STATES = "('queued', 'flashing', 'running')";

/** A session's idle time in host milliseconds, rounded as everywhere a lease is renewed. */
const idleMs = (idleSeconds: number) => Math.round(idleSeconds * 1000);

/** The schema version this code writes; a database from a newer version is refused. */
export const SQLITE_SCHEMA_VERSION = latestVersion(benchStoreMigrations);

/** The bench store on SQLite (better-sqlite3, WAL). One process owns the file. */
export class SqliteBenchStore implements BenchStore {
  /** The open database. For this class and its tests only: the service sees `BenchStore`. */
  readonly database: Database.Database;
  readonly boardHealth: SqliteQuarantineStore;
  readonly waitlist: SqliteWaitlist;

  constructor(file: string) {
    // Agents' token hashes and e-mails, the CSRF secret: 0600, and SQLite gives -wal/-shm the same mode.
    prepareOwnerOnlyDatabase(file);
    this.database = new Database(file);
    this.database.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the response that reports it is sent.
    this.database.pragma('synchronous = FULL');
    this.database.pragma('foreign_keys = ON');
    this.database.pragma('busy_timeout = 5000');
    migrateBenchDatabase(this.database);
    this.boardHealth = new SqliteQuarantineStore(this.database);
    this.waitlist = new SqliteWaitlist(this.database);
  }

  async ping(): Promise<void> {
    this.database.prepare('SELECT 1').get();
  }

  async insertAgent(agent: AgentRecord): Promise<void> {
    this.database
      .prepare('INSERT INTO agents (agent_id, label, token_sha256, created_at_ms) VALUES (?, ?, ?, ?)')
      .run(agent.agentId, agent.label, agent.tokenSha256, agent.createdAtMs);
  }

  async getAgent(agentId: string): Promise<AgentRecord | undefined> {
    const row = this.database.prepare('SELECT * FROM agents WHERE agent_id = ?').get(agentId) as AgentRow | undefined;
    return row && agentFromRow(row);
  }

  async findAgentByTokenSha256(tokenSha256: string): Promise<AgentRecord | undefined> {
    const row = this.database.prepare('SELECT * FROM agents WHERE token_sha256 = ?').get(tokenSha256) as AgentRow | undefined;
    return row && agentFromRow(row);
  }

  async expireSessions(nowMs: number): Promise<SessionRecord[]> {
    return this.database.transaction(() => this.expireDue(nowMs)).immediate();
  }

  /** Runs inside a transaction: expires due sessions and releases their leases (`closeSession`). */
  private expireDue(nowMs: number): SessionRecord[] {
    const db = this.database;
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
      this.closeSession(row.session_id, 'expired', row.expires_at_ms);
    }
    return due.map((row) => ({ ...sessionFromRow(row), state: 'expired' as const, endedAtMs: row.expires_at_ms }));
  }

  /**
   * Runs inside a transaction, for a session that just ended or expired: its queued jobs are
   * failed as `cancelled` (they must not run under the next holder's lease), and its lease is
   * released only when none of its jobs is flashing or running. Otherwise the lease passes to
   * that job, so the board stays held until it finishes (`finishJob` frees it); the service
   * cancels it through the dispatcher.
   */
  private closeSession(sessionId: string, how: 'ended' | 'expired', atMs: number): void {
    const db = this.database;
    db.prepare(
      `UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = ?, finished_at_ms = ?
       WHERE session_id = ? AND state = 'queued'`,
    ).run(`cancelled before it started: session ${sessionId} ${how} at ${isoFromMs(atMs)}`, atMs, sessionId);
    const active = db
      .prepare("SELECT job_id FROM jobs WHERE session_id = ? AND state IN ('flashing', 'running') ORDER BY created_at_ms, rowid LIMIT 1")
      .get(sessionId) as { job_id: string } | undefined;
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
  private hasUnfinishedJob(sessionId: string): boolean {
    const row = this.database
      .prepare(`SELECT 1 AS one FROM jobs WHERE session_id = ? AND state IN ${UNFINISHED_JOB_STATES} LIMIT 1`)
      .get(sessionId) as { one: number } | undefined;
    return row !== undefined;
  }

  /**
   * A session as agents see it at `nowMs`: while one of its jobs is unfinished the session is in
   * use, as if it heartbeated all along, so it expires no earlier than `nowMs + idle` (the
   * stored expiry is renewed for real when that job finishes, `renewAfterJob`).
   */
  private inUse(session: SessionRecord, nowMs: number): SessionRecord {
    if (session.state !== 'active' || !this.hasUnfinishedJob(session.sessionId)) return session;
    return { ...session, expiresAtMs: Math.max(session.expiresAtMs, nowMs + idleMs(session.idleSeconds)) };
  }

  /**
   * A session as it stands at `nowMs`, without writing: one due then (`expireDue` would expire
   * it) is shown expired at its `expiresAtMs`, exactly as the sweep will record it.
   */
  private asOf(session: SessionRecord, nowMs: number): SessionRecord {
    const seen = this.inUse(session, nowMs);
    if (seen.state !== 'active' || seen.expiresAtMs > nowMs) return seen;
    return { ...seen, state: 'expired', endedAtMs: seen.expiresAtMs };
  }

  /**
   * A job of `sessionId` just finished (done, failed, interrupted): its session's idle time
   * starts again from `nowMs`, exactly as a heartbeat would (the expiry never moves earlier).
   */
  private renewAfterJob(sessionId: string | null, nowMs: number): void {
    if (sessionId === null) return;
    const row = this.database.prepare("SELECT idle_seconds FROM sessions WHERE session_id = ? AND state = 'active'").get(sessionId) as
      | { idle_seconds: number }
      | undefined;
    if (!row) return;
    this.database
      .prepare('UPDATE sessions SET expires_at_ms = MAX(expires_at_ms, ?) WHERE session_id = ?')
      .run(nowMs + idleMs(row.idle_seconds), sessionId);
  }

  private leaseOn(board: string, nowMs: number): LeaseWithAgent | undefined {
    const row = this.database
      .prepare(
        `SELECT l.board, l.holder_kind, l.holder_id, l.agent_id, a.label AS agent_label, s.expires_at_ms, s.idle_seconds
         FROM leases l JOIN agents a ON a.agent_id = l.agent_id
         LEFT JOIN sessions s ON l.holder_kind = 'session' AND s.session_id = l.holder_id
         WHERE l.board = ?`,
      )
      .get(board) as LeaseRow | undefined;
    return row && this.leaseFromRow(row, nowMs);
  }

  private leaseFromRow(r: LeaseRow, nowMs: number): LeaseWithAgent {
    if (r.holder_kind === 'job') {
      return { board: r.board, holder: { kind: 'job', jobId: r.holder_id }, agentId: r.agent_id, agentLabel: r.agent_label, expiresAtMs: null };
    }
    const storedMs = r.expires_at_ms ?? 0;
    const expiresAtMs =
      r.idle_seconds !== null && this.hasUnfinishedJob(r.holder_id) ? Math.max(storedMs, nowMs + idleMs(r.idle_seconds)) : storedMs;
    return { board: r.board, holder: { kind: 'session', sessionId: r.holder_id }, agentId: r.agent_id, agentLabel: r.agent_label, expiresAtMs };
  }

  async openSession(session: SessionRecord): Promise<OpenSessionResult> {
    const db = this.database;
    // IMMEDIATE takes the write lock first, so the check and the insert are one step for every
    // writer of this file (other connections included), not only for this process.
    return db
      .transaction((): OpenSessionResult => {
        this.expireDue(session.createdAtMs);
        const lease = this.leaseOn(session.board, session.createdAtMs);
        if (lease) return { kind: 'board-leased', lease };
        insertSession(db, session);
        db.prepare("INSERT INTO leases (board, holder_kind, holder_id, agent_id) VALUES (?, 'session', ?, ?)").run(
          session.board,
          session.sessionId,
          session.agentId,
        );
        return { kind: 'opened', session };
      })
      .immediate();
  }

  async getSession(sessionId: string, nowMs: number): Promise<SessionRecord | undefined> {
    // A plain read: a session due at `nowMs` is shown expired, the sweep (`expireSessions`) records it.
    const row = this.database.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as SessionRow | undefined;
    return row && this.asOf(sessionFromRow(row), nowMs);
  }

  private changeSession(sessionId: string, nowMs: number, change: (s: SessionRecord) => void): SessionChangeResult {
    return this.database
      .transaction((): SessionChangeResult => {
        this.expireDue(nowMs);
        const row = this.database.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as SessionRow | undefined;
        if (!row) return { kind: 'not-found' };
        const session = sessionFromRow(row);
        if (session.state !== 'active') return { kind: 'not-active', session };
        change(session);
        const fresh = this.database.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as SessionRow;
        return { kind: 'changed', session: this.inUse(sessionFromRow(fresh), nowMs) };
      })
      .immediate();
  }

  async heartbeatSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, (s) => {
      this.database
        .prepare('UPDATE sessions SET expires_at_ms = ?, last_heartbeat_at_ms = ? WHERE session_id = ?')
        .run(nowMs + Math.round(s.idleSeconds * 1000), nowMs, sessionId);
    });
  }

  async endSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, () => {
      this.database.prepare("UPDATE sessions SET state = 'ended', ended_at_ms = ? WHERE session_id = ?").run(nowMs, sessionId);
      this.closeSession(sessionId, 'ended', nowMs);
    });
  }

  async listActiveSessions(nowMs: number): Promise<SessionWithAgent[]> {
    const rows = this.database
      .prepare(
        `SELECT s.*, a.label AS agent_label FROM sessions s JOIN agents a ON a.agent_id = s.agent_id
         WHERE s.state = 'active' ORDER BY s.created_at_ms, s.rowid`,
      )
      .all() as Array<SessionRow & { agent_label: string }>;
    return rows
      .map((r) => ({ ...this.asOf(sessionFromRow(r), nowMs), agentLabel: r.agent_label }))
      .filter((s) => s.state === 'active');
  }

  async createJob(job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number }): Promise<CreateJobResult> {
    const db = this.database;
    return db
      .transaction((): CreateJobResult => {
        this.expireDue(options.nowMs);
        if (job.sessionId !== null) {
          const row = db.prepare('SELECT * FROM sessions WHERE session_id = ?').get(job.sessionId) as SessionRow | undefined;
          // Another agent's session is reported exactly like a missing one: existence is not revealed.
          if (!row || row.agent_id !== job.agentId) return { kind: 'session-not-found' };
          const session = sessionFromRow(row);
          if (session.state !== 'active') return { kind: 'session-not-active', session };
          if (session.board !== job.board) return { kind: 'session-other-board', session };
        } else {
          const lease = this.leaseOn(job.board, options.nowMs);
          if (lease) return { kind: 'board-leased', lease };
        }
        const { queued } = db
          .prepare("SELECT COUNT(*) AS queued FROM jobs WHERE board = ? AND state = 'queued'")
          .get(job.board) as { queued: number };
        if (queued >= options.maxQueuedPerBoard) return { kind: 'queue-full', queued };
        db.prepare(
          `INSERT INTO jobs (job_id, agent_id, board, session_id, state, firmware_sha256, firmware_size_bytes, elf_json,
             uart_seconds, created_at_ms)
           VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)`,
        ).run(
          job.jobId,
          job.agentId,
          job.board,
          job.sessionId,
          job.firmware.sha256,
          job.firmware.sizeBytes,
          JSON.stringify(job.firmware.elf),
          job.uartSeconds,
          job.createdAtMs,
        );
        if (job.sessionId === null) {
          db.prepare("INSERT INTO leases (board, holder_kind, holder_id, agent_id) VALUES (?, 'job', ?, ?)").run(job.board, job.jobId, job.agentId);
        }
        return { kind: 'created', job: { ...job, state: 'queued' } };
      })
      .immediate();
  }

  async getJob(jobId: string): Promise<JobRecord | undefined> {
    const row = this.database.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
    return row && jobFromRow(row);
  }

  async markJobPhase(jobId: string, phase: 'flashing' | 'running', nowMs: number): Promise<void> {
    const db = this.database;
    const column = phase === 'flashing' ? 'started_at_ms' : 'running_at_ms';
    const from = phase === 'flashing' ? 'queued' : 'flashing';
    db.transaction(() => {
      if (phase === 'flashing') {
        // Checked first for an error that names the job in the way; the unique index is the backstop.
        const busy = db
          .prepare(
            `SELECT j.board, j.job_id FROM jobs me JOIN jobs j ON j.board = me.board AND j.job_id <> me.job_id
             WHERE me.job_id = ? AND me.state = 'queued' AND j.state IN ('flashing', 'running') LIMIT 1`,
          )
          .get(jobId) as { board: string; job_id: string } | undefined;
        if (busy) throw new BoardBusyError(busy.board, jobId, busy.job_id);
      }
      const result = db.prepare(`UPDATE jobs SET state = ?, ${column} = ? WHERE job_id = ? AND state = ?`).run(phase, nowMs, jobId, from);
      if (result.changes === 1) return;
      // A job cancelled (its session closed) while the dispatcher was starting it: the cancel wins.
      const current = db.prepare('SELECT state FROM jobs WHERE job_id = ?').get(jobId) as { state: JobState } | undefined;
      if (current?.state === 'failed') return;
      throw new Error(`job ${jobId} cannot move to ${phase}: it is not ${from}`);
    }).immediate();
  }

  async saveJobUart(jobId: string, uart: UartRecord): Promise<void> {
    // Only while the job runs: an outcome already recorded is never overwritten by a late save.
    this.database
      .prepare("UPDATE jobs SET uart_bytes = ?, uart_json = ? WHERE job_id = ? AND state IN ('flashing', 'running')")
      .run(Buffer.from(uart.bytes), uartJson(uart), jobId);
  }

  async finishJob(jobId: string, outcome: JobOutcome): Promise<JobRecord> {
    const db = this.database;
    return db
      .transaction(() => {
        const uart = outcome.uart ?? null;
        const before = db.prepare('SELECT state, session_id FROM jobs WHERE job_id = ?').get(jobId) as
          | { state: JobState; session_id: string | null }
          | undefined;
        if (before?.state === 'done' || before?.state === 'failed') {
          // Already finished (e.g. cancelled when its session closed): the first outcome stands.
        } else if (outcome.state === 'done') {
          db.prepare(
            `UPDATE jobs SET state = 'done', finished_at_ms = ?, uart_bytes = ?, uart_json = ?, stop_json = ?, flash_ms = ?, run_ms = ?
             WHERE job_id = ?`,
          ).run(outcome.nowMs, Buffer.from(outcome.uart.bytes), uartJson(outcome.uart), JSON.stringify(outcome.stop), outcome.flashMs, outcome.runMs, jobId);
        } else {
          db.prepare(
            `UPDATE jobs SET state = 'failed', finished_at_ms = ?, failure_kind = ?, failure_message = ?, uart_bytes = ?, uart_json = ?
             WHERE job_id = ?`,
          ).run(outcome.nowMs, outcome.failure.kind, outcome.failure.message, uart ? Buffer.from(uart.bytes) : null, uart ? uartJson(uart) : null, jobId);
        }
        if (before && before.state !== 'done' && before.state !== 'failed') this.renewAfterJob(before.session_id, outcome.nowMs);
        db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(jobId);
        const row = db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
        if (!row) throw new Error(`job ${jobId} vanished while finishing`);
        return jobFromRow(row);
      })
      .immediate();
  }

  async recoverAfterRestart(nowMs: number): Promise<{ requeued: JobRecord[]; interrupted: JobRecord[]; expired: SessionRecord[] }> {
    const db = this.database;
    return db
      .transaction(() => {
        const stuck = db.prepare("SELECT * FROM jobs WHERE state IN ('flashing', 'running') ORDER BY created_at_ms, rowid").all() as JobRow[];
        for (const row of stuck) {
          db.prepare("UPDATE jobs SET state = 'failed', failure_kind = 'interrupted', failure_message = ?, finished_at_ms = ? WHERE job_id = ?").run(
            `the bench service restarted while this job was ${row.state}; submit it again`,
            nowMs,
            row.job_id,
          );
          db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(row.job_id);
          // The job ended with the restart: its session's idle time starts now, not at the crash.
          this.renewAfterJob(row.session_id, nowMs);
        }
        const expired = this.expireDue(nowMs);
        const requeued = (db.prepare("SELECT * FROM jobs WHERE state = 'queued' ORDER BY created_at_ms, rowid").all() as JobRow[]).map(jobFromRow);
        const interrupted = stuck.map((r) => jobFromRow(db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(r.job_id) as JobRow));
        return { requeued, interrupted, expired };
      })
      .immediate();
  }

  async listLeases(nowMs: number): Promise<LeaseWithAgent[]> {
    const rows = this.database
      .prepare(
        `SELECT l.board, l.holder_kind, l.holder_id, l.agent_id, a.label AS agent_label, s.expires_at_ms, s.idle_seconds
         FROM leases l JOIN agents a ON a.agent_id = l.agent_id
         LEFT JOIN sessions s ON l.holder_kind = 'session' AND s.session_id = l.holder_id
         ORDER BY l.board`,
      )
      .all() as LeaseRow[];
    // A session lease due at `nowMs` is as good as freed: the sweep frees it without a job to pass it to.
    return rows.map((row) => this.leaseFromRow(row, nowMs)).filter((l) => !(l.holder.kind === 'session' && l.expiresAtMs! <= nowMs));
  }

  async boardActivity(): Promise<Map<string, { queued: number; active: number }>> {
    const rows = this.database
      .prepare(
        `SELECT board, SUM(state = 'queued') AS queued, SUM(state IN ('flashing', 'running')) AS active
         FROM jobs WHERE state IN ('queued', 'flashing', 'running') GROUP BY board`,
      )
      .all() as Array<{ board: string; queued: number; active: number }>;
    return new Map(rows.map((r) => [r.board, { queued: r.queued, active: r.active }]));
  }

  async counts(nowMs?: number): Promise<StoreCounts> {
    const db = this.database;
    const agents = (db.prepare('SELECT COUNT(*) AS n FROM agents').get() as { n: number }).n;
    const sessionsOpen =
      nowMs === undefined
        ? (db.prepare("SELECT COUNT(*) AS n FROM sessions WHERE state = 'active'").get() as { n: number }).n
        : (await this.listActiveSessions(nowMs)).length;
    const byState = db.prepare('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state').all() as Array<{ state: JobState; n: number }>;
    const jobsByState = Object.fromEntries(jobStates.map((s) => [s, 0])) as Record<JobState, number>;
    let jobsTotal = 0;
    for (const r of byState) {
      jobsByState[r.state] = r.n;
      jobsTotal += r.n;
    }
    return { agents, sessionsOpen, jobsTotal, jobsByState };
  }

  async recentJobs(limit: number): Promise<JobWithAgent[]> {
    return this.jobsWithAgent('', limit);
  }

  async recentFailures(limit: number): Promise<JobWithAgent[]> {
    return this.jobsWithAgent("WHERE j.state = 'failed'", limit);
  }

  private jobsWithAgent(where: string, limit: number): JobWithAgent[] {
    const rows = this.database
      .prepare(
        `SELECT j.*, a.label AS agent_label FROM jobs j JOIN agents a ON a.agent_id = j.agent_id ${where}
         ORDER BY j.created_at_ms DESC, j.rowid DESC LIMIT ?`,
      )
      .all(limit) as Array<JobRow & { agent_label: string }>;
    return rows.map((r) => ({ ...jobFromRow(r), agentLabel: r.agent_label }));
  }

  async secret(name: string, create: () => Uint8Array): Promise<Uint8Array> {
    const db = this.database;
    return db
      .transaction(() => {
        const row = db.prepare('SELECT value FROM secrets WHERE name = ?').get(name) as { value: Buffer } | undefined;
        if (row) return new Uint8Array(row.value);
        const value = create();
        db.prepare('INSERT INTO secrets (name, value) VALUES (?, ?)').run(name, Buffer.from(value));
        return value;
      })
      .immediate();
  }

  async close(): Promise<void> {
    if (this.database.open) this.database.close();
  }
}

interface AgentRow {
  agent_id: string;
  label: string;
  token_sha256: string;
  created_at_ms: number;
}

interface SessionRow {
  session_id: string;
  agent_id: string;
  board: string;
  state: SessionState;
  idle_seconds: number;
  created_at_ms: number;
  expires_at_ms: number;
  ended_at_ms: number | null;
  last_heartbeat_at_ms: number | null;
}

interface LeaseRow {
  board: string;
  holder_kind: 'session' | 'job';
  holder_id: string;
  agent_id: string;
  agent_label: string;
  expires_at_ms: number | null;
  idle_seconds: number | null;
}

interface JobRow {
  job_id: string;
  agent_id: string;
  board: string;
  session_id: string | null;
  state: JobState;
  firmware_sha256: string;
  firmware_size_bytes: number;
  elf_json: string;
  uart_seconds: number;
  uart_bytes: Buffer | null;
  uart_json: string | null;
  stop_json: string | null;
  failure_kind: string | null;
  failure_message: string | null;
  created_at_ms: number;
  started_at_ms: number | null;
  running_at_ms: number | null;
  finished_at_ms: number | null;
  flash_ms: number | null;
  run_ms: number | null;
}

function insertSession(db: Database.Database, s: SessionRecord): void {
  db.prepare(
    `INSERT INTO sessions (session_id, agent_id, board, state, idle_seconds, created_at_ms, expires_at_ms, ended_at_ms, last_heartbeat_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(s.sessionId, s.agentId, s.board, s.state, s.idleSeconds, s.createdAtMs, s.expiresAtMs, s.endedAtMs, s.lastHeartbeatAtMs);
}

const agentFromRow = (r: AgentRow): AgentRecord => ({
  agentId: r.agent_id,
  label: r.label,
  tokenSha256: r.token_sha256,
  createdAtMs: r.created_at_ms,
});

const sessionFromRow = (r: SessionRow): SessionRecord => ({
  sessionId: r.session_id,
  agentId: r.agent_id,
  board: r.board,
  state: r.state,
  idleSeconds: r.idle_seconds,
  createdAtMs: r.created_at_ms,
  expiresAtMs: r.expires_at_ms,
  endedAtMs: r.ended_at_ms,
  lastHeartbeatAtMs: r.last_heartbeat_at_ms,
});

/** UART metadata as stored beside the raw bytes (the bytes go in their own BLOB column). */
interface UartJson {
  droppedBytes: number;
  timeBase: 'simulated' | 'wall';
  clockSource?: string;
  chunks: UartRecord['chunks'];
  chunksOmitted: number;
}

function uartJson(u: UartRecord): string {
  const j: UartJson = { droppedBytes: u.droppedBytes, timeBase: u.timeBase, clockSource: u.clockSource, chunks: u.chunks, chunksOmitted: u.chunksOmitted };
  return JSON.stringify(j);
}

function jobFromRow(r: JobRow): JobRecord {
  let uart: UartRecord | null = null;
  if (r.uart_json !== null) {
    const meta = JSON.parse(r.uart_json) as UartJson;
    uart = { ...meta, bytes: new Uint8Array(r.uart_bytes ?? new Uint8Array(0)) };
  }
  return {
    jobId: r.job_id,
    agentId: r.agent_id,
    board: r.board,
    sessionId: r.session_id,
    state: r.state,
    firmware: { sha256: r.firmware_sha256, sizeBytes: r.firmware_size_bytes, elf: JSON.parse(r.elf_json) as ElfSummary },
    uartSeconds: r.uart_seconds,
    uart,
    stop: r.stop_json === null ? null : (JSON.parse(r.stop_json) as StopRecord),
    failure: r.failure_kind === null ? null : { kind: r.failure_kind as NonNullable<JobRecord['failure']>['kind'], message: r.failure_message ?? '' },
    createdAtMs: r.created_at_ms,
    startedAtMs: r.started_at_ms,
    runningAtMs: r.running_at_ms,
    finishedAtMs: r.finished_at_ms,
    flashMs: r.flash_ms,
    runMs: r.run_ms,
  };
}
