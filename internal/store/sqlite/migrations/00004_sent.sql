-- +goose Up
CREATE TABLE sent (
    channel    TEXT    NOT NULL,
    account    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    sent_at    INTEGER NOT NULL,
    PRIMARY KEY (channel, account, message_id)
) STRICT;

CREATE INDEX sent_by_time ON sent (sent_at);

-- +goose Down
DROP TABLE sent;
