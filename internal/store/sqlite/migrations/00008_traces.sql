-- +goose Up
-- Decision traces of the messages something happened to (answered,
-- dropped, commands): one row per message, its steps as JSON, replaced
-- when more steps come.
CREATE TABLE traces (
    chat    TEXT    NOT NULL,
    msg     TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    sender  TEXT    NOT NULL DEFAULT '',
    preview TEXT    NOT NULL DEFAULT '',
    at      INTEGER NOT NULL,
    steps   TEXT    NOT NULL,
    PRIMARY KEY (chat, msg)
) STRICT, WITHOUT ROWID;

CREATE INDEX traces_by_time ON traces (at);

-- +goose Down
DROP TABLE traces;
