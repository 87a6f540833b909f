import { sqlMigration, type Migration } from '../run-migrations.js';

/**
 * The relay database's schema, run by the shared migration runner (decision 0311). Append only:
 * a shipped step is never edited; a change is a new entry with the next version. Column names
 * follow decision 0311: snake_case, units in the name (`created_ms`, `file_bytes`). A new step needs
 * its twin in pg-relay-migrations.ts (the relay's tables on PostgreSQL, decision 0440); a test
 * compares the two schemas column by column.
 */
export const relayMigrations: readonly Migration[] = [
  // Version 1 is the schema the relay created, unversioned, on every start before the runner: every
  // statement says IF NOT EXISTS / OR IGNORE, so on a database from then it changes nothing and only
  // records the version.
  sqlMigration(1, 'baseline', `
CREATE TABLE IF NOT EXISTS nodes (
  node_id TEXT PRIMARY KEY,
  local INTEGER NOT NULL,              -- 1: registered here (may hold credentials); 0: learned from a peer
  name TEXT NOT NULL DEFAULT '',
  about TEXT NOT NULL DEFAULT '',
  cred_version INTEGER NOT NULL DEFAULT 1,
  registration TEXT NOT NULL,          -- the signed x.register/1 document, kept so peers can verify it
  origin TEXT,                         -- peer URL it came from, NULL when registered here
  invited_by TEXT,
  listed INTEGER NOT NULL DEFAULT 0,
  phone_discoverable INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS used_proofs (sig TEXT PRIMARY KEY, used_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS phones (
  phone TEXT PRIMARY KEY,
  node_id TEXT NOT NULL UNIQUE REFERENCES nodes(node_id),
  verified_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS phone_codes (
  id INTEGER PRIMARY KEY,
  phone TEXT NOT NULL,
  purpose TEXT NOT NULL,               -- verify | login | recover
  node_id TEXT,                        -- the node the code is for; NULL when the number is unknown
  code_hash TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  used INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS phone_codes_by_phone ON phone_codes (phone, purpose);
CREATE TABLE IF NOT EXISTS code_sends (phone TEXT NOT NULL, sent_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS code_sends_by_phone ON code_sends (phone, sent_ms);
CREATE TABLE IF NOT EXISTS lookups (caller TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bots (
  bot_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL REFERENCES nodes(node_id),
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,     -- sha256 of the token; the token itself is shown once
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER
);
CREATE TABLE IF NOT EXISTS items (
  item_id TEXT PRIMARY KEY,
  type TEXT NOT NULL,                  -- claim | file
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  body TEXT NOT NULL DEFAULT '',
  file_bytes INTEGER,
  media_type TEXT,
  author TEXT NOT NULL,
  bot_id TEXT,
  origin TEXT,
  created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS votes (
  voter TEXT NOT NULL,
  item_id TEXT NOT NULL REFERENCES items(item_id),
  value TEXT NOT NULL,
  phase TEXT NOT NULL,
  doc TEXT NOT NULL,                   -- the signed vote as received (hint included)
  origin TEXT,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (voter, item_id, value, phase)
);
CREATE INDEX IF NOT EXISTS votes_by_item ON votes (item_id);
CREATE TABLE IF NOT EXISTS slices (
  node_id TEXT PRIMARY KEY,
  qset TEXT NOT NULL,
  hash TEXT NOT NULL,
  t_auto INTEGER NOT NULL,             -- 1: t follows the default threshold as entries change
  updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS qsets (hash TEXT PRIMARY KEY, qset TEXT NOT NULL);
-- The highest bulletin this relay reported for a node and item: a later report never goes below it
-- (design scp-s5: "a node's rank for an item never goes down", even when a published slice changes).
CREATE TABLE IF NOT EXISTS bulletin_floors (
  item_id TEXT NOT NULL,
  node_id TEXT NOT NULL,
  state TEXT NOT NULL,
  value TEXT,
  accepted_via TEXT,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (item_id, node_id)
);
CREATE TABLE IF NOT EXISTS pairings (
  token_hash TEXT PRIMARY KEY,
  node_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  confirmed_by TEXT,
  confirmed_ms INTEGER
);
CREATE TABLE IF NOT EXISTS pairs (a TEXT NOT NULL, b TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (a, b));
CREATE TABLE IF NOT EXISTS invites (
  code TEXT PRIMARY KEY,
  inviter TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  accepted_by TEXT,
  accepted_ms INTEGER
);
CREATE TABLE IF NOT EXISTS reports (
  report_id INTEGER PRIMARY KEY,
  item_id TEXT NOT NULL,
  reporter TEXT NOT NULL,
  bot_id TEXT,
  reason TEXT NOT NULL,
  note TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  UNIQUE (item_id, reporter)
);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, -- AUTOINCREMENT: never reused, even after deletes
  kind TEXT NOT NULL,
  author TEXT NOT NULL,
  subject TEXT NOT NULL,
  payload TEXT NOT NULL,
  origin TEXT,
  created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_author ON events (author, seq);
CREATE TABLE IF NOT EXISTS peers (
  url TEXT PRIMARY KEY,
  node_id TEXT,
  added_ms INTEGER NOT NULL,
  added_by TEXT,
  cursor INTEGER NOT NULL DEFAULT 0,
  last_probe_ms INTEGER,
  reachable INTEGER,
  last_error TEXT,
  version TEXT,
  pulled_events INTEGER NOT NULL DEFAULT 0,
  rejected_events INTEGER NOT NULL DEFAULT 0
);
-- Bumped (by the triggers, in the writing transaction) whenever the set the relay's default slice is
-- built from may change: nodes registered here and peer relay nodes. Voting rebuilds that slice only then.
CREATE TABLE IF NOT EXISTS membership (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
INSERT OR IGNORE INTO membership (id, version) VALUES (1, 0);
CREATE TRIGGER IF NOT EXISTS membership_node_added AFTER INSERT ON nodes BEGIN UPDATE membership SET version = version + 1; END;
CREATE TRIGGER IF NOT EXISTS membership_node_changed AFTER UPDATE OF node_id, local ON nodes WHEN OLD.node_id IS NOT NEW.node_id OR OLD.local IS NOT NEW.local BEGIN UPDATE membership SET version = version + 1; END;
CREATE TRIGGER IF NOT EXISTS membership_node_removed AFTER DELETE ON nodes BEGIN UPDATE membership SET version = version + 1; END;
CREATE TRIGGER IF NOT EXISTS membership_peer_added AFTER INSERT ON peers BEGIN UPDATE membership SET version = version + 1; END;
CREATE TRIGGER IF NOT EXISTS membership_peer_changed AFTER UPDATE OF node_id ON peers WHEN OLD.node_id IS NOT NEW.node_id BEGIN UPDATE membership SET version = version + 1; END;
CREATE TRIGGER IF NOT EXISTS membership_peer_removed AFTER DELETE ON peers BEGIN UPDATE membership SET version = version + 1; END;
`),
  // GET /lookup used to log each lookup here, so a read wrote to the database; the per-caller limit
  // now lives in memory (LookupLimiter, issue 18: a read never writes).
  sqlMigration(2, 'lookup limit in memory', `DROP TABLE IF EXISTS lookups;`),
  // Trust (issue 18): what peers can check instead of taking a relay's word. Items keep their
  // author's signed x.item/1 statement, published slices the node's signed x.slice/1 declaration
  // (NULL: posted here without one, so never forwarded as the node's word), and each peer the
  // documents it served that failed verification; past a bound it is suspended (not pulled from)
  // until an operator adds it again. Decisions 0410 and 0411.
  sqlMigration(3, 'signed authorship, slice declarations and peer standing', `
ALTER TABLE items ADD COLUMN authorship TEXT;
ALTER TABLE slices ADD COLUMN declaration TEXT;
ALTER TABLE peers ADD COLUMN offences INTEGER NOT NULL DEFAULT 0;
ALTER TABLE peers ADD COLUMN last_offence TEXT;
ALTER TABLE peers ADD COLUMN suspended_ms INTEGER;
`),
  // Convergence (issue 18): a voter's other signed documents for a statement it already made here
  // (same voter, item, value and phase; another signature: another created_at or slice). Kept (a few
  // per statement) and published, so every relay that received them holds them all, whatever order
  // they came in, and counts the slices they declare; `votes` keeps the first stored.
  sqlMigration(4, 'other documents of a statement', `
CREATE TABLE IF NOT EXISTS vote_documents (
  voter TEXT NOT NULL,
  item_id TEXT NOT NULL REFERENCES items(item_id),
  value TEXT NOT NULL,
  phase TEXT NOT NULL,
  sig TEXT NOT NULL,
  doc TEXT NOT NULL,
  origin TEXT,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (voter, item_id, value, phase, sig)
);
CREATE INDEX IF NOT EXISTS vote_documents_by_item ON vote_documents (item_id);
`),
  // GET /search at network scale (decision 0505): trigram indexes of the searched columns, which
  // the repositories use to narrow `LIKE '%q%'` before applying it to the real columns. External
  // content (the text stays in items/nodes only; the index is keyed by their rowid, which the relay
  // already relies on: items page by it, and nothing here runs VACUUM or REPLACE). Triggers keep the
  // index in step in the writing transaction; 'rebuild' indexes the rows the database already holds.
  // columnsize=0: no per-row size table, which only ranking (bm25) would read.
  sqlMigration(5, 'trigram search indexes', `
CREATE VIRTUAL TABLE items_search USING fts5(title, content='items', content_rowid='rowid', tokenize='trigram', columnsize=0);
CREATE VIRTUAL TABLE nodes_search USING fts5(name, about, content='nodes', content_rowid='rowid', tokenize='trigram', columnsize=0);
CREATE TRIGGER items_search_added AFTER INSERT ON items BEGIN
  INSERT INTO items_search (rowid, title) VALUES (NEW.rowid, NEW.title);
END;
CREATE TRIGGER items_search_changed AFTER UPDATE OF title ON items BEGIN
  INSERT INTO items_search (items_search, rowid, title) VALUES ('delete', OLD.rowid, OLD.title);
  INSERT INTO items_search (rowid, title) VALUES (NEW.rowid, NEW.title);
END;
CREATE TRIGGER items_search_removed AFTER DELETE ON items BEGIN
  INSERT INTO items_search (items_search, rowid, title) VALUES ('delete', OLD.rowid, OLD.title);
END;
CREATE TRIGGER nodes_search_added AFTER INSERT ON nodes BEGIN
  INSERT INTO nodes_search (rowid, name, about) VALUES (NEW.rowid, NEW.name, NEW.about);
END;
CREATE TRIGGER nodes_search_changed AFTER UPDATE OF name, about ON nodes BEGIN
  INSERT INTO nodes_search (nodes_search, rowid, name, about) VALUES ('delete', OLD.rowid, OLD.name, OLD.about);
  INSERT INTO nodes_search (rowid, name, about) VALUES (NEW.rowid, NEW.name, NEW.about);
END;
CREATE TRIGGER nodes_search_removed AFTER DELETE ON nodes BEGIN
  INSERT INTO nodes_search (nodes_search, rowid, name, about) VALUES ('delete', OLD.rowid, OLD.name, OLD.about);
END;
INSERT INTO items_search (items_search) VALUES ('rebuild');
INSERT INTO nodes_search (nodes_search) VALUES ('rebuild');
`),
  // Every POST /invites and POST /pair/start counts and prunes the caller's rows (pruneDoneInvites,
  // pruneDonePairings: bounded per node), and GET /invites lists them: by their node, not by a scan
  // of every node's rows.
  sqlMigration(6, 'invites and pairing tokens by their node', `
CREATE INDEX IF NOT EXISTS invites_by_inviter ON invites (inviter, created_ms);
CREATE INDEX IF NOT EXISTS pairings_by_node ON pairings (node_id);
`),
  // Public reads that walked the nodes on every request (decision 1100). GET /network and the site
  // counted the nodes registered here, reading every node: the count is kept here instead, by
  // triggers in the writing transaction, so it is exact whoever writes and a read costs one row.
  // The other public counts need no row of theirs on SQLite: nothing deletes nodes, items, votes or
  // events, so the largest rowid (seq) is their count (RelayCountRepository). PostgreSQL's twin
  // keeps every count here (no rowid there). GET /nodes lists the oldest nodes: by an index, not by
  // sorting them all. GET /nodes/{id} counts the node's items and GET /items?author= pages them: by
  // an index of their author (with the rowid, which every SQLite index holds), not by reading every item.
  sqlMigration(7, 'public reads without a walk of the nodes or items', `
CREATE INDEX nodes_by_age ON nodes (created_ms, node_id);
CREATE INDEX items_by_author ON items (author);
CREATE TABLE relay_counts (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO relay_counts (name, n) SELECT 'nodes_registered_here', COUNT(*) FROM nodes WHERE local = 1;
CREATE TRIGGER nodes_registered_here_added AFTER INSERT ON nodes WHEN NEW.local = 1 BEGIN
  UPDATE relay_counts SET n = n + 1 WHERE name = 'nodes_registered_here';
END;
CREATE TRIGGER nodes_registered_here_changed AFTER UPDATE OF local ON nodes WHEN (OLD.local = 1) IS NOT (NEW.local = 1) BEGIN
  UPDATE relay_counts SET n = n + (NEW.local = 1) - (OLD.local = 1) WHERE name = 'nodes_registered_here';
END;
CREATE TRIGGER nodes_registered_here_removed AFTER DELETE ON nodes WHEN OLD.local = 1 BEGIN
  UPDATE relay_counts SET n = n - 1 WHERE name = 'nodes_registered_here';
END;
`),
  // A vote event repeated its statement's document (about 1.9 KB with a slice of 20) beside the
  // same text in `votes`: every vote wrote it twice, and a commit wrote the pages of both (decision
  // 1170). From here a vote event of a statement's first document names it instead (its voter is
  // `author`, its item `subject`) with an empty payload, and the feed reads the document from
  // `votes`. Events stored before keep their payload (vote_value NULL), as do other documents.
  sqlMigration(8, 'vote events name their statement', `
ALTER TABLE events ADD COLUMN vote_value TEXT;
ALTER TABLE events ADD COLUMN vote_phase TEXT;
`),
];
