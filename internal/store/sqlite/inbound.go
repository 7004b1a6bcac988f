package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qLogInbound = `INSERT INTO messages (seq, chat, message_id, views, logged_at, body) VALUES (?, ?, ?, ?, ?, ?)`
	qClaim      = `INSERT INTO dedup (key, expires_at) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE dedup.expires_at <= ?`
	qMark = `INSERT INTO view_marks (chat, view, upto) VALUES (?, ?, ?)
		ON CONFLICT (chat, view) DO UPDATE SET upto = excluded.upto WHERE excluded.upto > view_marks.upto`
)

// chatKey names a chat in the log.
func chatKey(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) string {
	return chatPrefix(ch, acct) + peer.String()
}

// chatPrefix starts the keys of every chat of an account. The parts are
// separated by a control character no id holds, so one account's prefix
// never starts another's keys.
func chatPrefix(ch msg.ChannelID, acct msg.AccountID) string {
	return string(ch) + sep + string(acct) + sep
}

const sep = "\x1f"

// AdmitTurn implements store.Store: the claim, the journal entry and what
// the turn consumes are one transaction.
func (d *DB) AdmitTurn(ctx context.Context, key string, ttl time.Duration, turn []byte, consume store.Consumed) (bool, error) {
	admitted := false
	err := d.tx(ctx, func(tx *sql.Tx) error {
		t := now()
		if err := d.consume(ctx, tx, consume); err != nil {
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
		if turn != nil {
			_, err = d.exec(ctx, tx, qJournal, key, turn, millis(t))
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("admit %s: %w", key, err)
	}
	return admitted, nil
}

// consume removes buffered entries and applies marks inside tx.
func (d *DB) consume(ctx context.Context, tx *sql.Tx, c store.Consumed) error {
	if err := d.unbuffer(ctx, tx, c.Entries); err != nil {
		return err
	}
	return d.mark(ctx, tx, c.Marks)
}

func (d *DB) mark(ctx context.Context, tx *sql.Tx, marks []store.Mark) error {
	for _, m := range marks {
		if _, err := d.exec(ctx, tx, qMark, chatKey(m.Channel, m.Account, m.Peer), int64(m.View), m.Seq); err != nil {
			return err
		}
	}
	return nil
}

// Advance implements store.InboundLog.
func (d *DB) Advance(ctx context.Context, marks ...store.Mark) error {
	if len(marks) == 0 {
		return nil
	}
	if err := d.tx(ctx, func(tx *sql.Tx) error { return d.mark(ctx, tx, marks) }); err != nil {
		return fmt.Errorf("advance views: %w", err)
	}
	return nil
}

// LogInbound implements store.InboundLog: the entry is numbered now and
// written by the writer's next batch, without waiting for it.
func (d *DB) LogInbound(ctx context.Context, m msg.Message, views store.Views) (int64, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	r := &logRow{
		seq: d.seq.Add(1), chat: chatKey(m.Channel, m.Account, m.Peer), id: string(m.ID),
		views: int64(views), at: millis(now()), body: body,
	}
	if err := d.w.postRow(r); err != nil {
		return 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	return r.seq, nil
}

// logRow is one entry of the inbound log on its way to the database.
type logRow struct {
	seq       int64
	chat, id  string
	views, at int64
	body      []byte // the message's JSON
}

// insertRows inserts log entries inside tx, one statement each: a
// statement of many rows would make SQLite keep a statement journal (a
// temporary file written page by page), which costs more than it saves.
// The writer calls it.
func (d *DB) insertRows(tx *sql.Tx, rows []*logRow) error {
	ctx := context.Background()
	for _, r := range rows {
		if _, err := d.exec(ctx, tx, qLogInbound, r.seq, r.chat, r.id, r.views, r.at, r.body); err != nil {
			return fmt.Errorf("log inbound %s: %w", r.id, err)
		}
	}
	return nil
}

// RecentInbound implements store.InboundLog.
func (d *DB) RecentInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, limit int) ([]store.LoggedMessage, error) {
	var out []store.LoggedMessage
	seen := map[msg.MessageID]bool{}
	// A message logged twice (an implementation that delivered it again)
	// counts once: read a little more than asked.
	err := d.each(ctx, `
		SELECT seq, views, logged_at, body FROM messages WHERE chat = ? ORDER BY seq DESC LIMIT ?`,
		[]any{chatKey(ch, acct, peer), limit + limit/4 + 4}, func(rows *sql.Rows) error {
			lm, err := scanLogged(rows)
			if err != nil || len(out) == limit || seen[lm.Message.ID] {
				return err
			}
			seen[lm.Message.ID] = true
			out = append(out, lm)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("recent inbound of %s: %w", peer, err)
	}
	slices.Reverse(out)
	return out, nil
}

// HeldInbound implements store.InboundLog. It visits the account's chats
// through the log's index, one seek each, and reads each chat's newest
// entries after its mark.
func (d *DB) HeldInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, view store.Views, limit int) ([]store.LoggedMessage, error) {
	prefix := chatPrefix(ch, acct)
	var out []store.LoggedMessage
	err := d.w.do(func(tx *sql.Tx) error {
		ctx := quick(ctx)
		chat := prefix
		for {
			var next string
			err := tx.QueryRowContext(ctx, `SELECT chat FROM messages WHERE chat > ? ORDER BY chat LIMIT 1`, chat).Scan(&next)
			if err == sql.ErrNoRows || (err == nil && !strings.HasPrefix(next, prefix)) {
				return nil
			}
			if err != nil {
				return err
			}
			chat = next
			held, err := d.held(ctx, tx, chat, view, limit)
			if err != nil {
				return fmt.Errorf("chat %q: %w", chat, err)
			}
			out = append(out, held...)
		}
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("held inbound of %s/%s: %w", ch, acct, err)
	}
	return out, nil
}

// held reads what view holds of one chat, oldest first.
func (d *DB) held(ctx context.Context, tx *sql.Tx, chat string, view store.Views, limit int) ([]store.LoggedMessage, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT seq, views, logged_at, body FROM messages
		WHERE chat = ? AND views & ? != 0
		  AND seq > coalesce((SELECT upto FROM view_marks WHERE chat = ? AND view = ?), 0)
		ORDER BY seq DESC LIMIT ?`, chat, int64(view), chat, int64(view), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.LoggedMessage
	for rows.Next() {
		lm, err := scanLogged(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, lm)
	}
	slices.Reverse(out)
	return out, rows.Err()
}

func scanLogged(rows *sql.Rows) (store.LoggedMessage, error) {
	var lm store.LoggedMessage
	var views, logged int64
	var body []byte
	if err := rows.Scan(&lm.Seq, &views, &logged, &body); err != nil {
		return lm, err
	}
	if err := json.Unmarshal(body, &lm.Message); err != nil {
		return lm, fmt.Errorf("entry %d: %w", lm.Seq, err)
	}
	lm.Views, lm.LoggedAt = store.Views(views), fromMillis(logged)
	return lm, nil
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
