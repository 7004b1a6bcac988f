-- +goose Up
-- The ids of the bot's messages are appended in the order they were
-- sent, with no index: they are all read into memory at open (every
-- lookup is answered there), and pruned in the order they were added
-- (the rowid), from the oldest up to the first sent after the cut-off.
-- Keyed by id, each id went to a page of its own, and its time into an
-- index beside it: two pages written a reply. An id recorded twice has
-- two rows; the later counts.
CREATE TABLE sent_log (
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL
) STRICT;
INSERT INTO sent_log (channel, account, message_id, sent_at)
    SELECT channel, account, message_id, sent_at FROM sent ORDER BY sent_at;
DROP TABLE sent;
ALTER TABLE sent_log RENAME TO sent;

-- +goose Down
CREATE TABLE sent_by_id (
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    PRIMARY KEY (channel, account, message_id)
) STRICT, WITHOUT ROWID;
INSERT INTO sent_by_id (channel, account, message_id, sent_at)
    SELECT channel, account, message_id, max(sent_at) FROM sent GROUP BY channel, account, message_id;
DROP TABLE sent;
ALTER TABLE sent_by_id RENAME TO sent;
CREATE INDEX sent_by_time ON sent (sent_at);
