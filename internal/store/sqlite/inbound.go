package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qLogInbound = `INSERT INTO inbound (channel, account, peer, message_id, sent_at, logged_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	qClaim = `INSERT INTO dedup (key, expires_at) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE dedup.expires_at <= ?`
)

// Admit implements store.Store: the claim, the log entry and the removal
// of the consumed buffer entries are one transaction.
func (d *DB) Admit(ctx context.Context, m msg.Message, key string, ttl time.Duration, consume ...int64) (bool, error) {
	return d.AdmitTurn(ctx, m, key, ttl, nil, consume...)
}

// AdmitTurn implements store.Store: Admit, plus the journal entry of the
// turn when turn is not nil, in the same transaction.
func (d *DB) AdmitTurn(ctx context.Context, m msg.Message, key string, ttl time.Duration, turn []byte, consume ...int64) (bool, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("admit %s: %w", m.ID, err)
	}
	admitted := false
	err = d.tx(ctx, func(tx *sql.Tx) error {
		t := now()
		if err := d.unbuffer(ctx, tx, consume); err != nil {
			return err
		}
		res, err := d.exec(ctx, tx, qClaim, key, millis(t.Add(ttl)), millis(t))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		admitted = true
		if _, err = d.exec(ctx, tx, qLogInbound,
			string(m.Channel), string(m.Account), m.Peer.String(), string(m.ID), millis(m.Time), millis(t), string(body)); err != nil {
			return err
		}
		if turn != nil {
			_, err = d.exec(ctx, tx, qJournal, key, turn, millis(t))
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("admit %s: %w", m.ID, err)
	}
	return admitted, nil
}

// LogInbound implements store.InboundLog.
func (d *DB) LogInbound(ctx context.Context, m msg.Message) (bool, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	res, err := d.exec(ctx, nil, qLogInbound,
		string(m.Channel), string(m.Account), m.Peer.String(), string(m.ID), millis(m.Time), millis(now()), string(body))
	if err != nil {
		return false, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	return n == 1, nil
}

// RecentInbound implements store.InboundLog.
func (d *DB) RecentInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, limit int) ([]store.LoggedMessage, error) {
	var out []store.LoggedMessage
	err := d.each(ctx, `
		SELECT body, enriched, logged_at FROM inbound
		WHERE channel = ? AND account = ? AND peer = ?
		ORDER BY sent_at DESC, rowid DESC LIMIT ?`,
		[]any{string(ch), string(acct), peer.String(), limit}, func(rows *sql.Rows) error {
			var body string
			var lm store.LoggedMessage
			var logged int64
			if err := rows.Scan(&body, &lm.Enriched, &logged); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(body), &lm.Message); err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			lm.LoggedAt = fromMillis(logged)
			out = append(out, lm)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("recent inbound of %s: %w", peer, err)
	}
	slices.Reverse(out)
	return out, nil
}

// MarkEnriched implements store.InboundLog.
func (d *DB) MarkEnriched(ctx context.Context, m msg.Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("enrich %s: %w", m.ID, err)
	}
	res, err := d.exec(ctx, nil, `
		UPDATE inbound SET body = ?, enriched = 1 WHERE channel = ? AND account = ? AND peer = ? AND message_id = ?`,
		string(body), string(m.Channel), string(m.Account), m.Peer.String(), string(m.ID))
	if err != nil {
		return fmt.Errorf("enrich %s: %w", m.ID, err)
	}
	return mustAffect(res, "inbound message "+string(m.ID))
}

// ClaimDedup implements store.Dedup.
func (d *DB) ClaimDedup(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	t := now()
	res, err := d.exec(ctx, nil, qClaim, key, millis(t.Add(ttl)), millis(t))
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return n == 1, nil
}

// PruneDedup implements store.Dedup.
func (d *DB) PruneDedup(ctx context.Context) (int64, error) {
	res, err := d.exec(ctx, nil, `DELETE FROM dedup WHERE expires_at <= ?`, millis(now()))
	if err != nil {
		return 0, fmt.Errorf("prune dedup: %w", err)
	}
	return res.RowsAffected()
}
