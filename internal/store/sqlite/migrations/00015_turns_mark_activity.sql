-- +goose Up
-- A session's last activity is when its last turn was written, by
-- pincer's clock: the turn's row says so itself, rather than an update of
-- the session's row beside every turn inserted (two statements a turn, and
-- the sessions tree written in every commit that held one). A session's
-- updated_at still moves with what changes the session itself (a reset,
-- an option, its model); the later of the two is its activity.
ALTER TABLE turns ADD COLUMN written_at INTEGER NOT NULL DEFAULT 0;

-- +goose Down
UPDATE sessions SET updated_at = max(updated_at, coalesce((
    SELECT t.written_at FROM turns t WHERE t.session_key = sessions.key AND t.generation = sessions.generation
    ORDER BY t.seq DESC LIMIT 1), 0));
ALTER TABLE turns DROP COLUMN written_at;
