-- +goose Up
-- A log entry whose content its channel completes off the chat's order (a
-- merged forward being expanded) is marked until it is rewritten: what a
-- turn reads of the chat's history stops before it.
ALTER TABLE messages ADD COLUMN enrich_pending INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE messages DROP COLUMN enrich_pending;
