import { type Migration, migrate, sqlMigration } from '../run-migrations.js';
import { runSteps } from '../sql-steps.js';
import { RELAY_WRITE_LOCK_KEY, type RelayQuery } from './pg-relay-sql.js';

/**
 * Building the search indexes over an existing relay's rows: about 12 s for 500 000 titles on a
 * loaded 2-core machine; the relay's usual 35 s wait would leave a larger relay unable to start.
 */
const INDEX_BUILD_TIMEOUT_MS = 30 * 60_000;

/** Text compared and ordered bytewise, as SQLite does (the statement log's order relies on it). */
const T = 'TEXT COLLATE "C"';

/**
 * The relay's tables on PostgreSQL (decision 0440), in their own schema `relay` so they sit beside
 * the bench's in one database: the SQLite schema as relay-migrations.ts leaves it, with BIGINT for
 * host milliseconds, BIGSERIAL where SQLite has rowid (`items.item_seq` pages items) and the
 * membership triggers in PL/pgSQL. Three tables only PostgreSQL has: the relay's secrets (its node
 * and server keys, shared by every replica), file contents, and the write generation each write
 * transaction bumps so a replica knows when another one committed.
 */
export const pgRelayMigrations: readonly Migration[] = [
  sqlMigration(
    1,
    'baseline',
    `
CREATE TABLE nodes (
  node_id ${T} PRIMARY KEY,
  local INTEGER NOT NULL,
  name ${T} NOT NULL DEFAULT '',
  about ${T} NOT NULL DEFAULT '',
  cred_version INTEGER NOT NULL DEFAULT 1,
  registration ${T} NOT NULL,
  origin ${T},
  invited_by ${T},
  listed INTEGER NOT NULL DEFAULT 0,
  phone_discoverable INTEGER NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL
);
CREATE TABLE used_proofs (sig ${T} PRIMARY KEY, used_ms BIGINT NOT NULL);
CREATE TABLE phones (phone ${T} PRIMARY KEY, node_id ${T} NOT NULL UNIQUE REFERENCES nodes(node_id), verified_ms BIGINT NOT NULL);
CREATE TABLE phone_codes (
  id BIGSERIAL PRIMARY KEY,
  phone ${T} NOT NULL,
  purpose ${T} NOT NULL,
  node_id ${T},
  code_hash ${T} NOT NULL,
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  used INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX phone_codes_by_phone ON phone_codes (phone, purpose);
CREATE TABLE code_sends (phone ${T} NOT NULL, sent_ms BIGINT NOT NULL);
CREATE INDEX code_sends_by_phone ON code_sends (phone, sent_ms);
CREATE TABLE bots (
  bot_id ${T} PRIMARY KEY,
  owner ${T} NOT NULL REFERENCES nodes(node_id),
  name ${T} NOT NULL,
  token_hash ${T} NOT NULL UNIQUE,
  created_ms BIGINT NOT NULL,
  revoked_ms BIGINT
);
CREATE TABLE items (
  item_seq BIGSERIAL UNIQUE NOT NULL,
  item_id ${T} PRIMARY KEY,
  type ${T} NOT NULL,
  kind ${T} NOT NULL,
  title ${T} NOT NULL,
  body ${T} NOT NULL DEFAULT '',
  file_bytes BIGINT,
  media_type ${T},
  author ${T} NOT NULL,
  bot_id ${T},
  origin ${T},
  created_ms BIGINT NOT NULL,
  authorship ${T}
);
CREATE TABLE votes (
  voter ${T} NOT NULL,
  item_id ${T} NOT NULL REFERENCES items(item_id),
  value ${T} NOT NULL,
  phase ${T} NOT NULL,
  doc ${T} NOT NULL,
  origin ${T},
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (voter, item_id, value, phase)
);
CREATE INDEX votes_by_item ON votes (item_id);
CREATE TABLE vote_documents (
  voter ${T} NOT NULL,
  item_id ${T} NOT NULL REFERENCES items(item_id),
  value ${T} NOT NULL,
  phase ${T} NOT NULL,
  sig ${T} NOT NULL,
  doc ${T} NOT NULL,
  origin ${T},
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (voter, item_id, value, phase, sig)
);
CREATE INDEX vote_documents_by_item ON vote_documents (item_id);
CREATE TABLE slices (
  node_id ${T} PRIMARY KEY,
  qset ${T} NOT NULL,
  hash ${T} NOT NULL,
  t_auto INTEGER NOT NULL,
  updated_ms BIGINT NOT NULL,
  declaration ${T}
);
CREATE TABLE qsets (hash ${T} PRIMARY KEY, qset ${T} NOT NULL);
CREATE TABLE bulletin_floors (
  item_id ${T} NOT NULL,
  node_id ${T} NOT NULL,
  state ${T} NOT NULL,
  value ${T},
  accepted_via ${T},
  updated_ms BIGINT NOT NULL,
  PRIMARY KEY (item_id, node_id)
);
CREATE TABLE pairings (
  token_hash ${T} PRIMARY KEY,
  node_id ${T} NOT NULL,
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL,
  confirmed_by ${T},
  confirmed_ms BIGINT
);
CREATE TABLE pairs (a ${T} NOT NULL, b ${T} NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY (a, b));
CREATE TABLE invites (
  code ${T} PRIMARY KEY,
  inviter ${T} NOT NULL,
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL,
  accepted_by ${T},
  accepted_ms BIGINT
);
CREATE TABLE reports (
  report_id BIGSERIAL PRIMARY KEY,
  item_id ${T} NOT NULL,
  reporter ${T} NOT NULL,
  bot_id ${T},
  reason ${T} NOT NULL,
  note ${T} NOT NULL,
  created_ms BIGINT NOT NULL,
  UNIQUE (item_id, reporter)
);
-- A sequence never reuses a value; the write lock makes seq order commit order (decision 0440).
CREATE TABLE events (
  seq BIGSERIAL PRIMARY KEY,
  kind ${T} NOT NULL,
  author ${T} NOT NULL,
  subject ${T} NOT NULL,
  payload ${T} NOT NULL,
  origin ${T},
  created_ms BIGINT NOT NULL
);
CREATE INDEX events_by_author ON events (author, seq);
CREATE TABLE peers (
  url ${T} PRIMARY KEY,
  node_id ${T},
  added_ms BIGINT NOT NULL,
  added_by ${T},
  cursor BIGINT NOT NULL DEFAULT 0,
  last_probe_ms BIGINT,
  reachable INTEGER,
  last_error ${T},
  version ${T},
  pulled_events BIGINT NOT NULL DEFAULT 0,
  rejected_events BIGINT NOT NULL DEFAULT 0,
  offences INTEGER NOT NULL DEFAULT 0,
  last_offence ${T},
  suspended_ms BIGINT
);
CREATE TABLE membership (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
INSERT INTO membership (id, version) VALUES (1, 0);
CREATE FUNCTION bump_membership() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE membership SET version = version + 1; RETURN NULL; END $$;
CREATE TRIGGER membership_node_added AFTER INSERT ON nodes FOR EACH ROW EXECUTE FUNCTION bump_membership();
CREATE TRIGGER membership_node_changed AFTER UPDATE OF node_id, local ON nodes FOR EACH ROW
  WHEN (OLD.node_id IS DISTINCT FROM NEW.node_id OR OLD.local IS DISTINCT FROM NEW.local) EXECUTE FUNCTION bump_membership();
CREATE TRIGGER membership_node_removed AFTER DELETE ON nodes FOR EACH ROW EXECUTE FUNCTION bump_membership();
CREATE TRIGGER membership_peer_added AFTER INSERT ON peers FOR EACH ROW EXECUTE FUNCTION bump_membership();
CREATE TRIGGER membership_peer_changed AFTER UPDATE OF node_id ON peers FOR EACH ROW
  WHEN (OLD.node_id IS DISTINCT FROM NEW.node_id) EXECUTE FUNCTION bump_membership();
CREATE TRIGGER membership_peer_removed AFTER DELETE ON peers FOR EACH ROW EXECUTE FUNCTION bump_membership();
CREATE TABLE relay_secrets (name ${T} PRIMARY KEY, hex ${T} NOT NULL);
CREATE TABLE relay_files (item_id ${T} PRIMARY KEY, content BYTEA NOT NULL);
CREATE TABLE write_generation (id INTEGER PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL);
INSERT INTO write_generation (id, generation) VALUES (1, 0);
`,
  ),
  // GET /search at network scale (decision 0506): pg_trgm's GIN indexes answer ILIKE '%q%' from
  // the index. The extension is trusted (any role that may CREATE in the database installs it)
  // but a managed server may not offer or allow it: the attempt runs in its own block, whose
  // failure rolls back only itself, and without the extension the search keeps scanning
  // (`searchIndexOf` tells which). An extension already installed elsewhere (often `public`,
  // outside this search_path) is used where it is, its operator class named with its schema.
  sqlMigration(
    2,
    'trigram search indexes',
    `
DO $$
DECLARE
  trgm_schema TEXT;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    BEGIN
      CREATE EXTENSION pg_trgm SCHEMA relay;
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'pg_trgm not installed (%): the relay search scans', SQLERRM;
    END;
  END IF;
  SELECT n.nspname INTO trgm_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  IF trgm_schema IS NOT NULL THEN
    BEGIN -- all three or none (say, no USAGE on the extension's schema): the search then scans
      EXECUTE format('CREATE INDEX items_title_trgm ON items USING gin (title %I.gin_trgm_ops)', trgm_schema);
      EXECUTE format('CREATE INDEX nodes_name_trgm ON nodes USING gin (name %I.gin_trgm_ops)', trgm_schema);
      EXECUTE format('CREATE INDEX nodes_about_trgm ON nodes USING gin (about %I.gin_trgm_ops)', trgm_schema);
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'pg_trgm indexes not created (%): the relay search scans', SQLERRM;
    END;
  END IF;
END $$;
`,
    { timeoutMs: INDEX_BUILD_TIMEOUT_MS },
  ),
  // As SQLite's migration 6: invites and pairing tokens are counted, pruned and listed by their node.
  sqlMigration(
    3,
    'invites and pairing tokens by their node',
    `
CREATE INDEX invites_by_inviter ON invites (inviter, created_ms);
CREATE INDEX pairings_by_node ON pairings (node_id);
`,
  ),
  // Public reads without a walk of a table (decision 1100). GET /nodes lists the oldest nodes by an
  // index; GET /nodes/{id} counts a node's items and GET /items?author= pages them by another. The
  // public counts (GET /network, the site, GET /nodes) are kept by triggers in the writing
  // transaction: PostgreSQL has no rowid, and a sequence is no count (a rolled back insert, or one
  // that conflicted, used its value). Every relay write transaction already holds the one
  // write lock and bumps the write generation's row, so these rows add no wait between replicas.
  // The triggers come before the counting: from CREATE TRIGGER on, no insert into that table commits
  // until this migration does, so every row is counted exactly once, by the seed or by a trigger.
  // The write lock first, so a transaction of a replica still running the old code cannot hold one
  // of these tables while waiting for another this migration took (a deadlock).
  sqlMigration(
    4,
    'public reads without a walk',
    `
SELECT pg_advisory_xact_lock(${RELAY_WRITE_LOCK_KEY});
CREATE INDEX nodes_by_age ON nodes (created_ms, node_id);
CREATE INDEX items_by_author ON items (author, item_seq);
CREATE TABLE relay_counts (name ${T} PRIMARY KEY, n BIGINT NOT NULL);
-- The table by its schema: a trigger runs with the search_path of whoever writes (an operator's psql too).
-- The membership trigger of version 1 named its table without one: an operator's insert of a node
-- or a peer failed with "relation membership does not exist"; replaced here, same behaviour.
CREATE OR REPLACE FUNCTION bump_membership() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE relay.membership SET version = version + 1; RETURN NULL; END $$;
CREATE FUNCTION add_to_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE relay.relay_counts SET n = n + TG_ARGV[1]::bigint WHERE name = TG_ARGV[0];
  RETURN NULL;
END $$;
CREATE TRIGGER nodes_added AFTER INSERT ON nodes FOR EACH ROW EXECUTE FUNCTION add_to_count('nodes', '1');
CREATE TRIGGER nodes_removed AFTER DELETE ON nodes FOR EACH ROW EXECUTE FUNCTION add_to_count('nodes', '-1');
CREATE TRIGGER nodes_registered_here_added AFTER INSERT ON nodes FOR EACH ROW WHEN (NEW.local = 1) EXECUTE FUNCTION add_to_count('nodes_registered_here', '1');
CREATE TRIGGER nodes_registered_here_gained AFTER UPDATE OF local ON nodes FOR EACH ROW WHEN (OLD.local <> 1 AND NEW.local = 1) EXECUTE FUNCTION add_to_count('nodes_registered_here', '1');
CREATE TRIGGER nodes_registered_here_lost AFTER UPDATE OF local ON nodes FOR EACH ROW WHEN (OLD.local = 1 AND NEW.local <> 1) EXECUTE FUNCTION add_to_count('nodes_registered_here', '-1');
CREATE TRIGGER nodes_registered_here_removed AFTER DELETE ON nodes FOR EACH ROW WHEN (OLD.local = 1) EXECUTE FUNCTION add_to_count('nodes_registered_here', '-1');
CREATE TRIGGER items_added AFTER INSERT ON items FOR EACH ROW EXECUTE FUNCTION add_to_count('items', '1');
CREATE TRIGGER items_removed AFTER DELETE ON items FOR EACH ROW EXECUTE FUNCTION add_to_count('items', '-1');
CREATE TRIGGER votes_added AFTER INSERT ON votes FOR EACH ROW EXECUTE FUNCTION add_to_count('votes', '1');
CREATE TRIGGER votes_removed AFTER DELETE ON votes FOR EACH ROW EXECUTE FUNCTION add_to_count('votes', '-1');
CREATE TRIGGER events_added AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION add_to_count('events', '1');
CREATE TRIGGER events_removed AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION add_to_count('events', '-1');
INSERT INTO relay_counts (name, n)
  SELECT 'nodes', COUNT(*) FROM nodes
  UNION ALL SELECT 'nodes_registered_here', COUNT(*) FROM nodes WHERE local = 1
  UNION ALL SELECT 'items', COUNT(*) FROM items
  UNION ALL SELECT 'votes', COUNT(*) FROM votes
  UNION ALL SELECT 'events', COUNT(*) FROM events;
`,
    { timeoutMs: INDEX_BUILD_TIMEOUT_MS },
  ),
  // SQLite's version 8 (decision 1170): a vote event names its statement. Here it still repeats
  // the document too, for replicas of the previous release during a rolling upgrade
  // (`RelayStore.appendVoteEvent`). The write lock first, as in version 4; nullable columns without
  // a default change no row.
  sqlMigration(
    5,
    'vote events name their statement',
    `
SELECT pg_advisory_xact_lock(${RELAY_WRITE_LOCK_KEY});
ALTER TABLE events ADD COLUMN vote_value ${T};
ALTER TABLE events ADD COLUMN vote_phase ${T};
`,
  ),
];

/** Session advisory lock held while migrating: replicas starting together take turns. */
const RELAY_MIGRATION_LOCK_KEY = 0x72656d67; // 'remg'

/**
 * Creates the `relay` schema if needed and brings it to the latest version with the one migration
 * runner (server/storage/run-migrations.ts), on one connection of the relay's pool (`query`);
 * refuses a schema a newer hilbench wrote. The connection's search_path must already be `relay`.
 */
export async function migrateRelaySchema(query: RelayQuery): Promise<void> {
  const steps = migrate(pgRelayMigrations, {
    label: 'the relay schema in PostgreSQL',
    versionTable: 'relay.schema_version',
    begin: 'BEGIN',
    enter: [`SELECT pg_advisory_lock(${RELAY_MIGRATION_LOCK_KEY})`, 'CREATE SCHEMA IF NOT EXISTS relay'],
    leave: [`SELECT pg_advisory_unlock(${RELAY_MIGRATION_LOCK_KEY})`],
  });
  await runSteps(steps, query);
}
