-- +goose Up
-- The traces of answered messages are appended in the order they begin
-- rather than kept in a WITHOUT ROWID tree by chat: a record is most of a
-- kilobyte, which a WITHOUT ROWID tree keeps partly on overflow pages, and
-- a record inserted at its chat's place in a tree of thousands of chats
-- wrote a page of its own, some of them split, in every commit that held
-- one. Appended, the records of a moment share the table's last pages,
-- the unique index finds a record by its chat and message, and the oldest
-- records are the first rows, so pruning needs no index of its own.
CREATE TABLE traces_log (
    id      INTEGER PRIMARY KEY,
    chat    TEXT    NOT NULL,
    msg     TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    sender  TEXT    NOT NULL DEFAULT '',
    preview TEXT    NOT NULL DEFAULT '',
    at      INTEGER NOT NULL,
    steps   TEXT    NOT NULL
) STRICT;
INSERT INTO traces_log (chat, msg, key, sender, preview, at, steps)
SELECT chat, msg, key, sender, preview, at, steps FROM traces ORDER BY at, chat, msg;
DROP TABLE traces;
ALTER TABLE traces_log RENAME TO traces;
CREATE UNIQUE INDEX traces_by_message ON traces (chat, msg);

-- +goose Down
CREATE TABLE traces_tree (
    chat    TEXT    NOT NULL,
    msg     TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    sender  TEXT    NOT NULL DEFAULT '',
    preview TEXT    NOT NULL DEFAULT '',
    at      INTEGER NOT NULL,
    steps   TEXT    NOT NULL,
    PRIMARY KEY (chat, msg)
) STRICT, WITHOUT ROWID;
INSERT INTO traces_tree (chat, msg, key, sender, preview, at, steps)
SELECT chat, msg, key, sender, preview, at, steps FROM traces;
DROP TABLE traces;
ALTER TABLE traces_tree RENAME TO traces;
CREATE INDEX traces_by_time ON traces (at);
