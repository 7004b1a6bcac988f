-- +goose Up
CREATE TABLE buffered (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    trigger    TEXT    NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    body       TEXT    NOT NULL
) STRICT;

CREATE INDEX buffered_by_scope ON buffered (scope, id);

-- +goose Down
DROP TABLE buffered;
