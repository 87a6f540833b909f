import type Database from 'better-sqlite3';
import { type Migration, runMigrations, type MigrationResult, sqlMigration } from '../run-migrations.js';
import { SQLITE_SESSION_QUEUE_MIGRATION } from './sqlite-session-queue.js';
import { DEBUG_ARMING_MIGRATION } from './debug-arming-store.js';

/**
 * The bench service's database, step by step (server/storage/run-migrations.ts: one runner for every
 * database). Append only: a shipped migration is never edited, a change is a new entry. Names
 * are snake_case, times `_ms` (host milliseconds since the epoch), sizes `_bytes`.
 */
export const benchStoreMigrations: readonly Migration[] = [
  sqlMigration(
    1,
    'baseline',
    `
  CREATE TABLE agents (
    agent_id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at_ms INTEGER NOT NULL
  );
  CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id),
    board TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'ended', 'expired')),
    idle_seconds REAL NOT NULL,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    ended_at_ms INTEGER,
    last_heartbeat_at_ms INTEGER
  );
  CREATE INDEX sessions_by_state ON sessions(state, expires_at_ms);
  -- One row per held board: the primary key is what makes a lease exclusive.
  CREATE TABLE leases (
    board TEXT PRIMARY KEY,
    holder_kind TEXT NOT NULL CHECK (holder_kind IN ('session', 'job')),
    holder_id TEXT NOT NULL,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id)
  );
  CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id),
    board TEXT NOT NULL,
    session_id TEXT,
    state TEXT NOT NULL CHECK (state IN ('queued', 'flashing', 'running', 'done', 'failed')),
    firmware_sha256 TEXT NOT NULL,
    firmware_size_bytes INTEGER NOT NULL,
    elf_json TEXT NOT NULL,
    uart_seconds REAL NOT NULL,
    uart_bytes BLOB,
    uart_json TEXT,
    stop_json TEXT,
    failure_kind TEXT,
    failure_message TEXT,
    created_at_ms INTEGER NOT NULL,
    started_at_ms INTEGER,
    running_at_ms INTEGER,
    finished_at_ms INTEGER,
    flash_ms INTEGER,
    run_ms INTEGER
  );
  CREATE INDEX jobs_by_board_state ON jobs(board, state);
  CREATE INDEX jobs_by_created ON jobs(created_at_ms);
  -- Server-wide secrets that must survive restarts (e.g. the key signing the waitlist CSRF tokens).
  CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
  );
`,
  ),
  // A session's queued and running jobs keep it alive (decision 0211): looked up at every expiry check.
  sqlMigration(
    2,
    'jobs by session',
    `
  CREATE INDEX jobs_by_session_state ON jobs(session_id, state);
`,
  ),
  // Board health and the waitlist were tables their classes created on the store's handle
  // (`CREATE TABLE IF NOT EXISTS`); IF NOT EXISTS here adopts a database that already has them.
  sqlMigration(
    3,
    'board health and waitlist',
    `
  CREATE TABLE IF NOT EXISTS board_health (
    board                TEXT    NOT NULL PRIMARY KEY,
    consecutive_failures INTEGER NOT NULL CHECK (consecutive_failures >= 0),
    last_failure         TEXT,
    quarantined_since_ms INTEGER,
    quarantine_reason    TEXT,
    -- A quarantine has both a time and a reason, or neither.
    CHECK ((quarantined_since_ms IS NULL) = (quarantine_reason IS NULL))
  );
  CREATE TABLE IF NOT EXISTS waitlist (
    email        TEXT    NOT NULL PRIMARY KEY,
    kind         TEXT    NOT NULL CHECK (kind IN ('person', 'team', 'agent')),
    note         TEXT    NOT NULL,
    joined_at_ms INTEGER NOT NULL
  );
  `,
  ),
  // One job per board is the store's rule, not only the dispatcher's memory. A database that
  // somehow holds two active jobs of a board keeps the oldest; the others fail as interrupted,
  // as the next start would fail them all anyway (the restart recovery of that time).
  sqlMigration(
    4,
    'one active job per board',
    `
  UPDATE jobs SET state = 'failed', failure_kind = 'interrupted',
    failure_message = 'the bench service restarted while this job was ' || state || '; submit it again',
    finished_at_ms = COALESCE(running_at_ms, started_at_ms, created_at_ms)
  WHERE state IN ('flashing', 'running')
    AND rowid NOT IN (SELECT MIN(rowid) FROM jobs WHERE state IN ('flashing', 'running') GROUP BY board);
  CREATE UNIQUE INDEX jobs_one_active_per_board ON jobs(board) WHERE state IN ('flashing', 'running');
`,
  ),
  // The job queue lives in the store (issue 13): the worker holding a job, when its claim lapses
  // (null: a worker in the server's own process), and why it was asked to stop.
  sqlMigration(
    5,
    'job claims',
    `
  ALTER TABLE jobs ADD COLUMN worker_id TEXT;
  ALTER TABLE jobs ADD COLUMN claim_expires_at_ms INTEGER;
  ALTER TABLE jobs ADD COLUMN cancel_reason TEXT;
  CREATE INDEX jobs_queued_by_board ON jobs(board, created_at_ms) WHERE state = 'queued';
  CREATE INDEX jobs_by_claim ON jobs(claim_expires_at_ms) WHERE state IN ('flashing', 'running');
`,
  ),
  // Bench workers (issue 10): credentials an administrator creates, the boards each serves, and
  // when it was last heard from.
  sqlMigration(
    6,
    'workers',
    `
  CREATE TABLE workers (
    worker_id       TEXT    NOT NULL PRIMARY KEY,
    label           TEXT    NOT NULL,
    token_sha256    TEXT    NOT NULL UNIQUE,
    created_at_ms   INTEGER NOT NULL,
    revoked_at_ms   INTEGER,
    last_seen_at_ms INTEGER,
    boards_json     TEXT    NOT NULL
  );
`,
  ),
  // Serial input for running jobs and health checks of boards on workers, both through the store
  // so every replica sees them (decisions 0420, 0421): inputs numbered per job (the next number and
  // the highest one the worker acknowledged live on the job), and one active check per board.
  sqlMigration(
    7,
    'serial input and worker health checks',
    `
  ALTER TABLE jobs ADD COLUMN serial_next_seq INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE jobs ADD COLUMN serial_acked_seq INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE job_serial_input (
    job_id       TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    bytes        BLOB    NOT NULL,
    queued_at_ms INTEGER NOT NULL,
    PRIMARY KEY (job_id, seq)
  );
  CREATE TABLE board_health_checks (
    check_id        TEXT    NOT NULL PRIMARY KEY,
    board           TEXT    NOT NULL,
    worker_id       TEXT    NOT NULL,
    state           TEXT    NOT NULL CHECK (state IN ('requested', 'running', 'done')),
    requested_at_ms INTEGER NOT NULL,
    timeout_ms      INTEGER NOT NULL,
    started_at_ms   INTEGER,
    finished_at_ms  INTEGER,
    outcome_json    TEXT
  );
  CREATE UNIQUE INDEX board_health_checks_one_active ON board_health_checks(board) WHERE state IN ('requested', 'running');
`,
  ),
  // Board pools (issue 27, decision 0510): a board id names a pool, a session or job holds one
  // instance of it. A pool of one has the board id as its only instance, so every existing row
  // gets its board as its instance. Leases are keyed by instance (one lease per instance), and the
  // one-job-at-a-time rule moves from the board to the instance.
  sqlMigration(
    8,
    'board pools',
    `
  ALTER TABLE sessions ADD COLUMN instance TEXT;
  UPDATE sessions SET instance = board;
  ALTER TABLE jobs ADD COLUMN instance TEXT;
  UPDATE jobs SET instance = board;
  CREATE TABLE leases_by_instance (
    instance TEXT PRIMARY KEY,
    board TEXT NOT NULL,
    holder_kind TEXT NOT NULL CHECK (holder_kind IN ('session', 'job')),
    holder_id TEXT NOT NULL,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id)
  );
  INSERT INTO leases_by_instance (instance, board, holder_kind, holder_id, agent_id)
    SELECT board, board, holder_kind, holder_id, agent_id FROM leases;
  DROP TABLE leases;
  ALTER TABLE leases_by_instance RENAME TO leases;
  CREATE INDEX leases_by_board ON leases(board);
  CREATE INDEX leases_by_holder ON leases(holder_kind, holder_id);
  DROP INDEX jobs_one_active_per_board;
  CREATE UNIQUE INDEX jobs_one_active_per_instance ON jobs(instance) WHERE state IN ('flashing', 'running');
  CREATE INDEX jobs_queued_by_instance ON jobs(instance, created_at_ms) WHERE state = 'queued';
`,
  ),
  // The session queue across replicas (decision 0555): sqlite-session-queue.ts.
  sqlMigration(9, 'session queue', SQLITE_SESSION_QUEUE_MIGRATION),
  // Debugging behind several replicas (decision 0663): debug-arming-store.ts.
  sqlMigration(10, 'debug armings', DEBUG_ARMING_MIGRATION),
];

/** Brings a bench database (the store's file, or a test's handle) to the current schema. */
export function migrateBenchDatabase(db: Database.Database): MigrationResult {
  return runMigrations(db, benchStoreMigrations, { label: 'the database' });
}
