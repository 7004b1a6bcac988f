-- +goose Up
-- The outbox is pruned in the order its entries were added (the rowid),
-- from the oldest up to the first added after the cut-off, rather than
-- through an index of the settled entries by their last update: every
-- sent reply was inserted into that index as it settled, a page of it
-- written in the commit that confirmed the send.
DROP INDEX outbox_settled;

-- +goose Down
CREATE INDEX outbox_settled ON outbox (updated_at) WHERE state != 'pending';
