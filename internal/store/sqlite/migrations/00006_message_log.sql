-- The inbound log becomes one numbered entry per message, and the history
-- and digest buffers become views of it: a message costs one row, and a
-- buffer that drops its oldest message writes nothing.
-- +goose Up
CREATE TABLE messages (
    seq        INTEGER PRIMARY KEY,
    chat       TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    views      INTEGER NOT NULL DEFAULT 0,
    logged_at  INTEGER NOT NULL,
    body       BLOB    NOT NULL -- the message's JSON
) STRICT;

CREATE INDEX messages_by_chat ON messages (chat, seq);

-- How far each chat's views were taken: a view holds the chat's messages
-- logged into it after upto.
CREATE TABLE view_marks (
    chat TEXT    NOT NULL,
    view INTEGER NOT NULL,
    upto INTEGER NOT NULL,
    PRIMARY KEY (chat, view)
) STRICT, WITHOUT ROWID;

INSERT INTO messages (chat, message_id, views, logged_at, body)
SELECT channel || char(31) || account || char(31) || peer, message_id, 0, logged_at, CAST(body AS BLOB)
FROM inbound ORDER BY logged_at, rowid;

-- What the history and digest buffers held moves into their views (a
-- message both held is logged once for each).
INSERT INTO messages (chat, message_id, views, logged_at, body)
SELECT coalesce(json_extract(body, '$.Channel') || char(31) || json_extract(body, '$.Account'), replace(scope, '/', char(31))) || char(31) || key, coalesce(json_extract(body, '$.ID'), ''),
       CASE kind WHEN 'history' THEN 1 ELSE 2 END, at, CAST(body AS BLOB)
FROM buffered WHERE kind IN ('history', 'digest') ORDER BY id;

DELETE FROM buffered WHERE kind IN ('history', 'digest');

DROP TABLE inbound;

-- +goose Down
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
DROP TABLE view_marks;
DROP TABLE messages;
