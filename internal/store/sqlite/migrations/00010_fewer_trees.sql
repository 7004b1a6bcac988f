-- +goose Up
-- Each table a turn writes costs a page a commit per b-tree it touches:
-- the small-row tables keyed by text become WITHOUT ROWID (one b-tree
-- instead of a table and its key's index), and buffered entries, numbered
-- by pincer, no longer keep a row of sqlite_sequence up to date.
CREATE TABLE dedup_new (
    key        TEXT    PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO dedup_new (key, expires_at) SELECT key, expires_at FROM dedup WHERE key IS NOT NULL;
DROP TABLE dedup;
ALTER TABLE dedup_new RENAME TO dedup;
CREATE INDEX dedup_by_expiry ON dedup (expires_at);

CREATE TABLE sent_new (
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    PRIMARY KEY (channel, account, message_id)
) STRICT, WITHOUT ROWID;
INSERT INTO sent_new (channel, account, message_id, sent_at) SELECT channel, account, message_id, sent_at FROM sent;
DROP TABLE sent;
ALTER TABLE sent_new RENAME TO sent;
CREATE INDEX sent_by_time ON sent (sent_at);

-- A turn's n is the order it was admitted in, which the rowid was.
CREATE TABLE pending_turns_new (
    key      TEXT    PRIMARY KEY,
    body     BLOB    NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    at       INTEGER NOT NULL,
    n        INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
INSERT INTO pending_turns_new (key, body, attempts, at, n) SELECT key, body, attempts, at, rowid FROM pending_turns WHERE key IS NOT NULL;
DROP TABLE pending_turns;
ALTER TABLE pending_turns_new RENAME TO pending_turns;

CREATE TABLE buffered_new (
    id      INTEGER PRIMARY KEY,
    scope   TEXT    NOT NULL,
    kind    TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    trigger TEXT    NOT NULL DEFAULT '',
    at      INTEGER NOT NULL,
    body    TEXT    NOT NULL
) STRICT;
INSERT INTO buffered_new (id, scope, kind, key, trigger, at, body) SELECT id, scope, kind, key, trigger, at, body FROM buffered;
DROP TABLE buffered;
ALTER TABLE buffered_new RENAME TO buffered;
CREATE INDEX buffered_by_scope ON buffered (scope, id);

-- The outbox's indexes hold only the rows they are read for: the pending
-- ones, few at any time, for the sends to resume, and the settled ones by
-- age, for the prune. A reply is no longer moved across an index when it
-- is sent.
DROP INDEX outbox_pending;
CREATE INDEX outbox_pending ON outbox (channel, account, created_at) WHERE state = 'pending';
DROP INDEX outbox_by_update;
CREATE INDEX outbox_settled ON outbox (updated_at) WHERE state != 'pending';

-- The chats table is saved lazily (see saveChains): it is complete up to
-- the log's last entry now.
INSERT INTO meta (key, value) VALUES ('chains_upto', (SELECT CAST(coalesce(max(seq), 0) AS TEXT) FROM messages))
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- +goose Down
DELETE FROM meta WHERE key = 'chains_upto';

DROP INDEX outbox_settled;
CREATE INDEX outbox_by_update ON outbox (state, updated_at);
DROP INDEX outbox_pending;
CREATE INDEX outbox_pending ON outbox (channel, account, state, created_at);

CREATE TABLE buffered_old (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    trigger    TEXT    NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    body       TEXT    NOT NULL
) STRICT;
INSERT INTO buffered_old SELECT id, scope, kind, key, trigger, at, body FROM buffered;
DROP TABLE buffered;
ALTER TABLE buffered_old RENAME TO buffered;
CREATE INDEX buffered_by_scope ON buffered (scope, id);

CREATE TABLE pending_turns_old (
    key        TEXT PRIMARY KEY,
    body       BLOB    NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    at         INTEGER NOT NULL
) STRICT;
INSERT INTO pending_turns_old (key, body, attempts, at) SELECT key, body, attempts, at FROM pending_turns ORDER BY at, n;
DROP TABLE pending_turns;
ALTER TABLE pending_turns_old RENAME TO pending_turns;

CREATE TABLE sent_old (
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    PRIMARY KEY (channel, account, message_id)
) STRICT;
INSERT INTO sent_old SELECT channel, account, message_id, sent_at FROM sent;
DROP TABLE sent;
ALTER TABLE sent_old RENAME TO sent;
CREATE INDEX sent_by_time ON sent (sent_at);

CREATE TABLE dedup_old (
    key        TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT;
INSERT INTO dedup_old SELECT key, expires_at FROM dedup;
DROP TABLE dedup;
ALTER TABLE dedup_old RENAME TO dedup;
CREATE INDEX dedup_by_expiry ON dedup (expires_at);
