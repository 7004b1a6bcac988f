-- +goose Up
-- The images a user turn showed the model: a JSON array of staged file
-- paths, '' for none.
ALTER TABLE turns ADD COLUMN images TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE turns DROP COLUMN images;
