-- +goose Up
-- The model tokens (input and output) spent per day by a user or a chat,
-- for the limits' daily budgets, /status and the dashboard. A turn adds
-- to two rows; a day's rows sit together, so pruning old days and
-- listing one day's largest read one range.
CREATE TABLE token_use (
    day    TEXT    NOT NULL,
    key    TEXT    NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (day, key)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE token_use;
