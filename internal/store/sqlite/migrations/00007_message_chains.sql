-- Each log entry links to the entry of its chat before it, and a table of
-- chats keeps each chat's last entry (written once per batch): a chat's
-- entries are read by walking back from its last, and logging a message
-- no longer updates an index of all chats, the larger part of its cost.
-- +goose Up
ALTER TABLE messages ADD COLUMN prev INTEGER NOT NULL DEFAULT 0;

UPDATE messages SET prev = chained.prev
FROM (SELECT seq, lag(seq, 1, 0) OVER (PARTITION BY chat ORDER BY seq) AS prev FROM messages) AS chained
WHERE messages.seq = chained.seq;

-- views is every view a message of the chat was ever logged into.
CREATE TABLE chats (
    chat  TEXT    PRIMARY KEY,
    last  INTEGER NOT NULL,
    views INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

INSERT INTO chats (chat, last, views)
SELECT chat, max(seq), max(views & 1) | max(views & 2) FROM messages GROUP BY chat;

DROP INDEX messages_by_chat;

-- +goose Down
CREATE INDEX messages_by_chat ON messages (chat, seq);
DROP TABLE chats;
ALTER TABLE messages DROP COLUMN prev;
