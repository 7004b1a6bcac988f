-- The whole schema of the PostgreSQL store, in one step: it starts where
-- the SQLite store's migrations arrived. Times are Unix milliseconds, as
-- pincer counts them (never the server's clock), and text keys compare
-- byte by byte (COLLATE "C"), as SQLite's do.
-- +goose Up
CREATE TABLE sessions (
    key            TEXT COLLATE "C" PRIMARY KEY,
    agent_id       TEXT    NOT NULL,
    model_override TEXT    NOT NULL DEFAULT '',
    generation     INTEGER NOT NULL DEFAULT 0,
    options        JSONB   NOT NULL DEFAULT '{}',
    created_at     BIGINT  NOT NULL,
    updated_at     BIGINT  NOT NULL
);

CREATE TABLE session_resets (
    session_key TEXT COLLATE "C" NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    generation  INTEGER NOT NULL,
    at          BIGINT  NOT NULL,
    reason      TEXT    NOT NULL,
    PRIMARY KEY (session_key, generation)
);

CREATE TABLE turns (
    session_key  TEXT COLLATE "C" NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    generation   INTEGER NOT NULL,
    seq          BIGINT  NOT NULL,
    role         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    tool_calls   TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    partial      BOOLEAN NOT NULL DEFAULT false,
    at           BIGINT  NOT NULL,
    images       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (session_key, generation, seq)
);

-- The inbound log. Entries are numbered from message_seq in blocks (see
-- numbers.go): the numbers one pincer hands out grow, and two pincers
-- sharing the database never hand out the same one.
CREATE SEQUENCE message_seq INCREMENT BY 100;

CREATE TABLE messages (
    seq            BIGINT PRIMARY KEY,
    chat           TEXT COLLATE "C" NOT NULL,
    message_id     TEXT    NOT NULL,
    views          INTEGER NOT NULL DEFAULT 0,
    logged_at      BIGINT  NOT NULL,
    body           BYTEA   NOT NULL, -- the message's JSON
    enrich_pending BOOLEAN NOT NULL DEFAULT false
);

CREATE INDEX messages_by_chat ON messages (chat, seq);
CREATE INDEX messages_by_time ON messages (logged_at);

-- Every view a chat's messages were ever logged into.
CREATE TABLE chats (
    chat  TEXT COLLATE "C" PRIMARY KEY,
    views INTEGER NOT NULL DEFAULT 0
);

-- How far each chat's views were taken: a view holds the chat's messages
-- logged into it after upto.
CREATE TABLE view_marks (
    chat TEXT COLLATE "C" NOT NULL,
    view INTEGER NOT NULL,
    upto BIGINT  NOT NULL,
    PRIMARY KEY (chat, view)
);

CREATE TABLE dedup (
    key        TEXT COLLATE "C" PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE INDEX dedup_by_expiry ON dedup (expires_at);

CREATE SEQUENCE buffered_id_seq INCREMENT BY 100;

CREATE TABLE buffered (
    id      BIGINT PRIMARY KEY,
    scope   TEXT COLLATE "C" NOT NULL,
    kind    TEXT   NOT NULL,
    key     TEXT   NOT NULL,
    trigger TEXT   NOT NULL DEFAULT '',
    at      BIGINT NOT NULL,
    body    TEXT   NOT NULL
);

CREATE INDEX buffered_by_scope ON buffered (scope, id);

CREATE TABLE sent (
    channel    TEXT COLLATE "C" NOT NULL,
    account    TEXT COLLATE "C" NOT NULL,
    message_id TEXT COLLATE "C" NOT NULL,
    sent_at    BIGINT NOT NULL,
    PRIMARY KEY (channel, account, message_id)
);

CREATE INDEX sent_by_time ON sent (sent_at);

CREATE TABLE pending_turns (
    key      TEXT COLLATE "C" PRIMARY KEY,
    body     BYTEA   NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    at       BIGINT  NOT NULL,
    n        BIGSERIAL
);

CREATE TABLE outbox (
    id         TEXT COLLATE "C" PRIMARY KEY,
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    peer       TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    sent       INTEGER NOT NULL DEFAULT 0,
    attempts   INTEGER NOT NULL DEFAULT 0,
    state      TEXT    NOT NULL,
    last_error TEXT    NOT NULL DEFAULT '',
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    n          BIGSERIAL
);

CREATE INDEX outbox_pending ON outbox (channel, account, created_at) WHERE state = 'pending';
CREATE INDEX outbox_settled ON outbox (updated_at) WHERE state != 'pending';

CREATE TABLE meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE traces (
    id      BIGSERIAL PRIMARY KEY,
    chat    TEXT COLLATE "C" NOT NULL,
    msg     TEXT COLLATE "C" NOT NULL,
    key     TEXT   NOT NULL,
    sender  TEXT   NOT NULL DEFAULT '',
    preview TEXT   NOT NULL DEFAULT '',
    at      BIGINT NOT NULL,
    steps   TEXT   NOT NULL
);

CREATE UNIQUE INDEX traces_by_message ON traces (chat, msg);
CREATE INDEX traces_by_time ON traces (at);

CREATE TABLE token_use (
    day    TEXT COLLATE "C" NOT NULL,
    key    TEXT COLLATE "C" NOT NULL,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (day, key)
);

-- +goose Down
DROP TABLE token_use;
DROP TABLE traces;
DROP TABLE meta;
DROP TABLE outbox;
DROP TABLE pending_turns;
DROP TABLE sent;
DROP TABLE buffered;
DROP SEQUENCE buffered_id_seq;
DROP TABLE dedup;
DROP TABLE view_marks;
DROP TABLE chats;
DROP TABLE messages;
DROP SEQUENCE message_seq;
DROP TABLE turns;
DROP TABLE session_resets;
DROP TABLE sessions;
