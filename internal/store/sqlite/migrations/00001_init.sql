-- +goose Up
CREATE TABLE sessions (
    key            TEXT PRIMARY KEY,
    agent_id       TEXT    NOT NULL,
    model_override TEXT    NOT NULL DEFAULT '',
    generation     INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE session_resets (
    session_key TEXT    NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    generation  INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    PRIMARY KEY (session_key, generation)
) STRICT;

CREATE TABLE turns (
    session_key  TEXT    NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    generation   INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    tool_calls   TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    partial      INTEGER NOT NULL DEFAULT 0,
    at           INTEGER NOT NULL,
    PRIMARY KEY (session_key, generation, seq)
) STRICT;

CREATE TABLE inbound (
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    peer       TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    logged_at  INTEGER NOT NULL,
    enriched   INTEGER NOT NULL DEFAULT 0,
    body       TEXT    NOT NULL,
    PRIMARY KEY (channel, account, peer, message_id)
) STRICT;

CREATE INDEX inbound_by_time ON inbound (channel, account, peer, sent_at);

CREATE TABLE dedup (
    key        TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX dedup_by_expiry ON dedup (expires_at);

-- +goose Down
DROP TABLE dedup;
DROP TABLE inbound;
DROP TABLE turns;
DROP TABLE session_resets;
DROP TABLE sessions;
