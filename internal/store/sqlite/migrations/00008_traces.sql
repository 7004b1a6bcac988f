-- +goose Up
-- Decision traces: one row per step, the record's header (sender,
-- preview) repeated on each, so a record is read back by its chat and
-- message id alone.
CREATE TABLE trace_steps (
    id      INTEGER PRIMARY KEY,
    chat    TEXT    NOT NULL,
    msg     TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    sender  TEXT    NOT NULL DEFAULT '',
    preview TEXT    NOT NULL DEFAULT '',
    at      INTEGER NOT NULL,
    stage   TEXT    NOT NULL,
    outcome TEXT    NOT NULL DEFAULT '',
    detail  TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX trace_steps_by_chat ON trace_steps (chat, msg, id);
CREATE INDEX trace_steps_by_time ON trace_steps (at);

-- +goose Down
DROP TABLE trace_steps;
