-- +goose Up
-- A session's turns are kept together, in one tree ordered by session,
-- generation and turn, rather than in a table in the order they were
-- written with an index of their key beside it: a turn wrote a page of
-- each, and a transcript read each turn's row where it was written. A
-- turn's text past a kilobyte goes to an overflow page as a row of its
-- own table did to a page of the table.
CREATE TABLE turns_by_session (
    session_key  TEXT    NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    generation   INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    tool_calls   TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    partial      INTEGER NOT NULL DEFAULT 0,
    at           INTEGER NOT NULL,
    images       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (session_key, generation, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO turns_by_session (session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images)
SELECT session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images FROM turns;
DROP TABLE turns;
ALTER TABLE turns_by_session RENAME TO turns;

-- +goose Down
CREATE TABLE turns_by_time (
    session_key  TEXT    NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    generation   INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    tool_calls   TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    partial      INTEGER NOT NULL DEFAULT 0,
    at           INTEGER NOT NULL,
    images       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (session_key, generation, seq)
) STRICT;
INSERT INTO turns_by_time (session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images)
SELECT session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images FROM turns;
DROP TABLE turns;
ALTER TABLE turns_by_time RENAME TO turns;
