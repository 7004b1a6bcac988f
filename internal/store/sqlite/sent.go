package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

const qRecordSent = `INSERT INTO sent (channel, account, message_id, sent_at) VALUES (?, ?, ?, ?)
	ON CONFLICT (channel, account, message_id) DO UPDATE SET sent_at = excluded.sent_at`

// RecordSent implements store.SentLog: the ids of one send (its chunks)
// are recorded in one transaction.
func (d *DB) RecordSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, ids ...msg.MessageID) error {
	if len(ids) == 0 {
		return nil
	}
	err := d.tx(ctx, func(tx *sql.Conn) error {
		at := millis(now())
		for _, id := range ids {
			if _, err := d.exec(ctx, tx, qRecordSent, string(ch), string(acct), string(id), at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record sent %v: %w", ids, err)
	}
	return nil
}

// WasSent implements store.SentLog.
func (d *DB) WasSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, id msg.MessageID) (bool, error) {
	var one int
	err := d.row(ctx, `SELECT 1 FROM sent WHERE channel = ? AND account = ? AND message_id = ?`,
		[]any{string(ch), string(acct), string(id)}, &one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("was sent %s: %w", id, err)
	}
	return true, nil
}

// PruneSent implements store.SentLog.
func (d *DB) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	res, err := d.exec(ctx, nil, `DELETE FROM sent WHERE sent_at < ?`, millis(before))
	if err != nil {
		return 0, fmt.Errorf("prune sent: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune sent: %w", err)
	}
	return n, nil
}
