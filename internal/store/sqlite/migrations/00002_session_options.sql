-- +goose Up
ALTER TABLE sessions ADD COLUMN options TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE sessions DROP COLUMN options;
