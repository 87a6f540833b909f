import { latestVersion, type Migration, migrate, type MigrationResult, sqlMigration } from '../../run-migrations.js';
import { numberPlaceholders, runSteps } from '../../sql-steps.js';
import { withCheckedOutClient } from '../../postgres/pg-faults.js';
import type { PgDatabase } from './pg-database.js';
import { PG_SESSION_JOB_END_MIGRATION, PG_SESSION_QUEUE_MIGRATION, PG_WORKERS_CHANGED_MIGRATION } from './pg-session-queue.js';
import { DEBUG_ARMING_MIGRATION } from '../debug-arming-store.js';

/**
 * The bench store's PostgreSQL schema: the same tables and columns as the SQLite one
 * (bench-store-migrations.ts), with `seq` for insertion order where SQLite has `rowid`, BYTEA for
 * blobs and BIGINT for host milliseconds; firmware blobs live here too, so every replica sees them.
 */
export const pgBenchMigrations: readonly Migration[] = [
  sqlMigration(
    1,
    'baseline',
    `
  CREATE TABLE agents (
    agent_id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at_ms BIGINT NOT NULL
  );
  CREATE TABLE sessions (
    seq BIGSERIAL UNIQUE,
    session_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id),
    board TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'ended', 'expired')),
    idle_seconds DOUBLE PRECISION NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    ended_at_ms BIGINT,
    last_heartbeat_at_ms BIGINT
  );
  CREATE INDEX sessions_by_state ON sessions(state, expires_at_ms);
  CREATE TABLE leases (
    board TEXT PRIMARY KEY,
    holder_kind TEXT NOT NULL CHECK (holder_kind IN ('session', 'job')),
    holder_id TEXT NOT NULL,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id)
  );
  CREATE TABLE jobs (
    seq BIGSERIAL UNIQUE,
    job_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id),
    board TEXT NOT NULL,
    session_id TEXT,
    state TEXT NOT NULL CHECK (state IN ('queued', 'flashing', 'running', 'done', 'failed')),
    firmware_sha256 TEXT NOT NULL,
    firmware_size_bytes BIGINT NOT NULL,
    elf_json TEXT NOT NULL,
    uart_seconds DOUBLE PRECISION NOT NULL,
    uart_bytes BYTEA,
    uart_json TEXT,
    stop_json TEXT,
    failure_kind TEXT,
    failure_message TEXT,
    created_at_ms BIGINT NOT NULL,
    started_at_ms BIGINT,
    running_at_ms BIGINT,
    finished_at_ms BIGINT,
    flash_ms DOUBLE PRECISION,
    run_ms DOUBLE PRECISION,
    worker_id TEXT,
    claim_expires_at_ms BIGINT,
    cancel_reason TEXT
  );
  CREATE INDEX jobs_by_board_state ON jobs(board, state);
  CREATE INDEX jobs_by_created ON jobs(created_at_ms);
  CREATE INDEX jobs_by_session_state ON jobs(session_id, state);
  CREATE UNIQUE INDEX jobs_one_active_per_board ON jobs(board) WHERE state IN ('flashing', 'running');
  CREATE INDEX jobs_queued_by_board ON jobs(board, created_at_ms) WHERE state = 'queued';
  CREATE INDEX jobs_by_claim ON jobs(claim_expires_at_ms) WHERE state IN ('flashing', 'running');
  CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BYTEA NOT NULL
  );
  CREATE TABLE board_health (
    board TEXT NOT NULL PRIMARY KEY,
    consecutive_failures INTEGER NOT NULL CHECK (consecutive_failures >= 0),
    last_failure TEXT,
    quarantined_since_ms BIGINT,
    quarantine_reason TEXT,
    CHECK ((quarantined_since_ms IS NULL) = (quarantine_reason IS NULL))
  );
  CREATE TABLE waitlist (
    email TEXT NOT NULL PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('person', 'team', 'agent')),
    note TEXT NOT NULL,
    joined_at_ms BIGINT NOT NULL
  );
  CREATE TABLE workers (
    seq BIGSERIAL UNIQUE,
    worker_id TEXT NOT NULL PRIMARY KEY,
    label TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT,
    last_seen_at_ms BIGINT,
    boards_json TEXT NOT NULL
  );
  CREATE TABLE firmware_blobs (
    sha256 TEXT PRIMARY KEY,
    bytes BYTEA NOT NULL
  );
`,
  ),
  // Serial input for running jobs and health checks of boards on workers (decisions 0420, 0421).
  sqlMigration(
    2,
    'serial input and worker health checks',
    `
  ALTER TABLE jobs ADD COLUMN serial_next_seq BIGINT NOT NULL DEFAULT 0;
  ALTER TABLE jobs ADD COLUMN serial_acked_seq BIGINT NOT NULL DEFAULT 0;
  CREATE TABLE job_serial_input (
    job_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    bytes BYTEA NOT NULL,
    queued_at_ms BIGINT NOT NULL,
    PRIMARY KEY (job_id, seq)
  );
  CREATE TABLE board_health_checks (
    seq BIGSERIAL UNIQUE,
    check_id TEXT NOT NULL PRIMARY KEY,
    board TEXT NOT NULL,
    worker_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('requested', 'running', 'done')),
    requested_at_ms BIGINT NOT NULL,
    timeout_ms BIGINT NOT NULL,
    started_at_ms BIGINT,
    finished_at_ms BIGINT,
    outcome_json TEXT
  );
  CREATE UNIQUE INDEX board_health_checks_one_active ON board_health_checks(board) WHERE state IN ('requested', 'running');
`,
  ),
  // Board pools (issue 27, decision 0510), as SQLite's migration 8: every row's instance is its
  // board (a pool of one); leases are keyed by instance; one active job per instance.
  sqlMigration(
    3,
    'board pools',
    `
  ALTER TABLE sessions ADD COLUMN instance TEXT;
  UPDATE sessions SET instance = board;
  ALTER TABLE sessions ALTER COLUMN instance SET NOT NULL;
  ALTER TABLE jobs ADD COLUMN instance TEXT;
  UPDATE jobs SET instance = board;
  ALTER TABLE jobs ALTER COLUMN instance SET NOT NULL;
  ALTER TABLE leases RENAME COLUMN board TO instance;
  ALTER TABLE leases ADD COLUMN board TEXT;
  UPDATE leases SET board = instance;
  ALTER TABLE leases ALTER COLUMN board SET NOT NULL;
  CREATE INDEX leases_by_board ON leases(board);
  CREATE INDEX leases_by_holder ON leases(holder_kind, holder_id);
  DROP INDEX jobs_one_active_per_board;
  CREATE UNIQUE INDEX jobs_one_active_per_instance ON jobs(instance) WHERE state IN ('flashing', 'running');
  CREATE INDEX jobs_queued_by_instance ON jobs(instance, created_at_ms) WHERE state = 'queued';
`,
  ),
  // The session queue across replicas (decision 0555): pg-session-queue.ts.
  sqlMigration(4, 'session queue', PG_SESSION_QUEUE_MIGRATION),
  // Debugging behind several replicas (decision 0663): debug-arming-store.ts.
  sqlMigration(5, 'debug armings', DEBUG_ARMING_MIGRATION),
  // A job in a session that ends is NOTIFYed (decision 0801): pg-session-queue.ts.
  sqlMigration(6, 'session job ends notified', PG_SESSION_JOB_END_MIGRATION),
  // Workers added, revoked or reporting other boards are NOTIFYed (decision 0860): pg-session-queue.ts.
  sqlMigration(7, 'worker changes notified', PG_WORKERS_CHANGED_MIGRATION),
];

/** The schema version this code writes. */
export const PG_SCHEMA_VERSION = latestVersion(pgBenchMigrations);

/** Session advisory lock held while migrating ('migr'): replicas starting together take turns. */
const MIGRATION_LOCK_KEY = 0x6d696772;

/**
 * Brings the database to the current schema with the one migration runner (server/storage/run-migrations.ts),
 * on a connection of its own. Replicas starting together take turns; a database from a newer
 * hilbench is refused, as with SQLite.
 */
export function migratePgBenchDatabase(db: PgDatabase): Promise<MigrationResult> {
  // A checked-out connection whose `error` events are handled (server/storage/postgres/pg-faults.ts).
  return withCheckedOutClient(db.pool, (connection) => {
    const steps = migrate(pgBenchMigrations, {
      label: 'the bench database',
      begin: 'BEGIN',
      enter: [`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`],
      leave: [`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`],
    });
    return runSteps(steps, async (statement) => {
      const result = await connection.send((client) =>
        statement.kind === 'script' ? client.query(statement.sql) : client.query(numberPlaceholders(statement.sql), statement.params as unknown[]),
      );
      if (statement.kind === 'one') return result.rows[0];
      if (statement.kind === 'all') return result.rows;
      return result.rowCount ?? 0;
    });
  });
}
