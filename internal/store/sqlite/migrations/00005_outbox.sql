-- +goose Up
CREATE TABLE pending_turns (
    key        TEXT PRIMARY KEY,
    body       BLOB    NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    at         INTEGER NOT NULL
) STRICT;

CREATE TABLE outbox (
    id         TEXT PRIMARY KEY,
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    peer       TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    sent       INTEGER NOT NULL DEFAULT 0,
    attempts   INTEGER NOT NULL DEFAULT 0,
    state      TEXT    NOT NULL,
    last_error TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX outbox_pending ON outbox (channel, account, state, created_at);
CREATE INDEX outbox_by_update ON outbox (state, updated_at);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE meta;
DROP TABLE outbox;
DROP TABLE pending_turns;
