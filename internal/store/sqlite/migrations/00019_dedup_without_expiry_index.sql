-- +goose Up
-- Expired dedup keys are found by a walk of the table in key order, a
-- part at a time, every ten minutes (see PruneDedup), rather than through
-- an index of their expiry: every key claimed was inserted into that
-- index too, a page of it written in the commit that admitted the turn.
-- A claim takes an expired key as free whether or not it was pruned.
DROP INDEX dedup_by_expiry;

-- +goose Down
CREATE INDEX dedup_by_expiry ON dedup (expires_at);
