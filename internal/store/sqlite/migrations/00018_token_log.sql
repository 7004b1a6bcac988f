-- +goose Up
-- A turn's tokens are appended to a log, at the end of one table, and
-- added to the day's counts every few seconds, in key order: added to a
-- person's and a chat's count at once, each turn wrote two pages of
-- token_use, wherever those counts were.
CREATE TABLE token_log (
    day    TEXT    NOT NULL,
    key    TEXT    NOT NULL,
    tokens INTEGER NOT NULL
) STRICT;

-- +goose Down
INSERT INTO token_use (day, key, tokens)
    SELECT day, key, sum(tokens) FROM token_log WHERE true GROUP BY day, key
    ON CONFLICT (day, key) DO UPDATE SET tokens = tokens + excluded.tokens;
DROP TABLE token_log;
