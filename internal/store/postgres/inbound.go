package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qLogInbound = `INSERT INTO messages (seq, chat, message_id, views, logged_at, body, enrich_pending) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	qChatViews  = `INSERT INTO chats (chat, views) VALUES ($1, $2)
		ON CONFLICT (chat) DO UPDATE SET views = chats.views | excluded.views WHERE chats.views | excluded.views <> chats.views`
	qComplete = `UPDATE messages SET body = $1, enrich_pending = false WHERE seq = $2 AND chat = $3`
	qClaim    = `INSERT INTO dedup (key, expires_at) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE dedup.expires_at <= $3`
	qMark = `INSERT INTO view_marks (chat, view, upto) VALUES ($1, $2, $3)
		ON CONFLICT (chat, view) DO UPDATE SET upto = excluded.upto WHERE excluded.upto > view_marks.upto`
	qJournal = `INSERT INTO pending_turns (key, body, at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET body = excluded.body, at = excluded.at, attempts = 0`
	qBuffer   = `INSERT INTO buffered (id, scope, kind, key, trigger, at, body) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	qUnbuffer = `DELETE FROM buffered WHERE id = ANY($1)`
	// entryColumns are what a LoggedMessage is read from.
	entryColumns = `seq, views, logged_at, body, enrich_pending`
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
// the turn consumes are one job under a savepoint.
func (d *DB) AdmitTurn(ctx context.Context, key string, ttl time.Duration, turn []byte, consume store.Consumed) (bool, error) {
	admitted := false
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		admitted = false
		t := now()
		if err := consumeIn(ctx, tx, consume); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qClaim, key, millis(t.Add(ttl)), millis(t))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		admitted = true
		if turn != nil {
			_, err = tx.Exec(ctx, qJournal, key, turn, millis(t))
		}
		return err
	}, true, false)
	if err != nil {
		return false, fmt.Errorf("admit %s: %w", key, err)
	}
	return admitted, nil
}

// consumeIn removes buffered entries and applies marks inside tx.
func consumeIn(ctx context.Context, tx pgx.Tx, c store.Consumed) error {
	if len(c.Entries) > 0 {
		if _, err := tx.Exec(ctx, qUnbuffer, c.Entries); err != nil {
			return err
		}
	}
	for _, m := range c.Marks {
		if _, err := tx.Exec(ctx, qMark, chatKey(m.Channel, m.Account, m.Peer), int64(m.View), m.Seq); err != nil {
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
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		return consumeIn(ctx, tx, store.Consumed{Marks: marks})
	}, true, false)
	if err != nil {
		return fmt.Errorf("advance views: %w", err)
	}
	return nil
}

// LogInbound implements store.InboundLog: the entry is numbered now and
// sent with the writer's next batch, without waiting for it.
func (d *DB) LogInbound(ctx context.Context, m msg.Message, views store.Views) (int64, error) {
	seq, _, err := d.logEntry(ctx, m, views, false, nil)
	return seq, err
}

// LogInboundPending implements store.InboundLog: LogInbound with the
// entry marked pending.
func (d *DB) LogInboundPending(ctx context.Context, m msg.Message, views store.Views) (int64, error) {
	seq, _, err := d.logEntry(ctx, m, views, true, nil)
	return seq, err
}

// LogInboundBuffered implements store.InboundLog: the log entry and the
// buffer entry are one posted job, so they are in one transaction.
func (d *DB) LogInboundBuffered(ctx context.Context, m msg.Message, views store.Views, b store.Buffered) (int64, int64, error) {
	return d.logEntry(ctx, m, views, false, &b)
}

// logEntry numbers m's entry (and b's, when set) and posts their writes.
func (d *DB) logEntry(ctx context.Context, m msg.Message, views store.Views, pending bool, b *store.Buffered) (seq, id int64, err error) {
	body, err := m.AppendJSON(nil)
	if err != nil {
		return 0, 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	chat := chatKey(m.Channel, m.Account, m.Peer)
	at := millis(now())
	if b != nil {
		if id, err = d.bufferID.one(ctx); err != nil {
			return 0, 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
		}
	}
	// Numbered and handed in under the allocator's lock, so entries reach
	// the writer in the order of their numbers.
	d.seq.mu.Lock()
	defer d.seq.mu.Unlock()
	if seq, err = d.seq.nextLocked(ctx); err != nil {
		return 0, 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	stmts := make([]stmt, 1, 3)
	stmts[0] = stmt{sql: qLogInbound, args: []any{seq, chat, string(m.ID), int64(views), at, body, pending}}
	if views != 0 {
		stmts = append(stmts, stmt{sql: qChatViews, args: []any{chat, int64(views)}})
	}
	if b != nil {
		stmts = append(stmts, stmt{sql: qBuffer, args: []any{id, b.Scope, b.Kind, b.Key, string(b.Trigger), at, string(body)}})
	}
	if err := d.w.post(stmts...); err != nil {
		return 0, 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	return seq, id, nil
}

// CompleteInbound implements store.InboundLog. The rewrite is posted: one
// a crash loses leaves the entry pending, which the next start completes
// again.
func (d *DB) CompleteInbound(ctx context.Context, seq int64, m msg.Message) error {
	body, err := m.AppendJSON(nil)
	if err != nil {
		return fmt.Errorf("complete inbound %s: %w", m.ID, err)
	}
	if err := d.w.post(stmt{sql: qComplete, args: []any{body, seq, chatKey(m.Channel, m.Account, m.Peer)}}); err != nil {
		return fmt.Errorf("complete inbound %s: %w", m.ID, err)
	}
	return nil
}

// scanEntry reads a log entry selected as entryColumns.
func scanEntry(row pgx.CollectableRow) (store.LoggedMessage, error) {
	var lm store.LoggedMessage
	var views, logged int64
	var body []byte
	if err := row.Scan(&lm.Seq, &views, &logged, &body, &lm.Pending); err != nil {
		return lm, err
	}
	lm.Views, lm.LoggedAt = store.Views(views), fromMillis(logged)
	if err := json.Unmarshal(body, &lm.Message); err != nil {
		return lm, fmt.Errorf("entry %d: %w", lm.Seq, err)
	}
	return lm, nil
}

// latest reads up to n of a chat's newest entries, newest first.
func latest(ctx context.Context, tx pgx.Tx, chat string, n int) ([]store.LoggedMessage, error) {
	rows, _ := tx.Query(ctx, `SELECT `+entryColumns+` FROM messages WHERE chat = $1 ORDER BY seq DESC LIMIT $2`, chat, n)
	return pgx.CollectRows(rows, scanEntry)
}

// RecentInbound implements store.InboundLog.
func (d *DB) RecentInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, limit int) ([]store.LoggedMessage, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.LoggedMessage
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		// A message logged twice (an implementation that delivered it
		// again) counts once: read a few more than asked, and all of the
		// chat when that was not enough.
		for n := limit + limit/4 + 4; ; n *= 4 {
			got, err := latest(ctx, tx, chatKey(ch, acct, peer), n)
			if err != nil {
				return err
			}
			out = out[:0]
			seen := map[msg.MessageID]bool{}
			for _, lm := range got {
				if !seen[lm.Message.ID] && len(out) < limit {
					seen[lm.Message.ID] = true
					out = append(out, lm)
				}
			}
			if len(out) == limit || len(got) < n {
				return nil
			}
		}
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("recent inbound of %s: %w", peer, err)
	}
	slices.Reverse(out)
	return out, nil
}

// FindInbound implements store.InboundLog.
func (d *DB) FindInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, id msg.MessageID, within int) (store.LoggedMessage, bool, error) {
	if within <= 0 {
		return store.LoggedMessage{}, false, nil
	}
	var found store.LoggedMessage
	ok := false
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+entryColumns+` FROM (
				SELECT `+entryColumns+`, message_id FROM messages WHERE chat = $1 ORDER BY seq DESC LIMIT $2) last
			WHERE message_id = $3 ORDER BY seq DESC LIMIT 1`, chatKey(ch, acct, peer), within, string(id))
		lm, err := pgx.CollectExactlyOneRow(rows, scanEntry)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found, ok = lm, err == nil
		return err
	}, false, false)
	if err != nil {
		return store.LoggedMessage{}, false, fmt.Errorf("find %s in the log of %s: %w", id, peer, err)
	}
	return found, ok, nil
}

// qHeld reads the newest entries of a view after each chat's mark, of the
// chats of an account that ever had one in the view.
const qHeld = `
	SELECT m.chat, m.seq, m.views, m.logged_at, m.body, m.enrich_pending FROM chats c
	CROSS JOIN LATERAL (
		SELECT e.chat, e.seq, e.views, e.logged_at, e.body, e.enrich_pending FROM messages e
		WHERE e.chat = c.chat AND e.views & $2 != 0
			AND e.seq > coalesce((SELECT upto FROM view_marks v WHERE v.chat = c.chat AND v.view = $2), 0)
		ORDER BY e.seq DESC LIMIT $3) m
	WHERE starts_with(c.chat, $1) AND c.views & $2 != 0
	ORDER BY m.chat, m.seq`

// HeldInbound implements store.InboundLog.
func (d *DB) HeldInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, view store.Views, limit int) ([]store.LoggedMessage, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.LoggedMessage
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, qHeld, chatPrefix(ch, acct), int64(view), limit)
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.LoggedMessage, error) {
			var lm store.LoggedMessage
			var chat string
			var views, logged int64
			var body []byte
			if err := row.Scan(&chat, &lm.Seq, &views, &logged, &body, &lm.Pending); err != nil {
				return lm, err
			}
			lm.Views, lm.LoggedAt = store.Views(views), fromMillis(logged)
			if err := json.Unmarshal(body, &lm.Message); err != nil {
				return lm, fmt.Errorf("entry %d: %w", lm.Seq, err)
			}
			return lm, nil
		})
		return err
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("held inbound of %s/%s: %w", ch, acct, err)
	}
	return out, nil
}

// qPruneInbound deletes a chat's entries logged before $1 up to the
// earliest mark of the views the chat ever used (0 for a view never
// taken); a chat in no view has no such bound. At most $2 a statement,
// the oldest first.
const qPruneInbound = `
	DELETE FROM messages WHERE seq IN (
		SELECT m.seq FROM messages m LEFT JOIN chats c ON c.chat = m.chat
		WHERE m.logged_at < $1 AND m.seq <= coalesce(least(
			CASE WHEN c.views & 1 != 0 THEN coalesce((SELECT upto FROM view_marks v WHERE v.chat = c.chat AND v.view = 1), 0) END,
			CASE WHEN c.views & 2 != 0 THEN coalesce((SELECT upto FROM view_marks v WHERE v.chat = c.chat AND v.view = 2), 0) END),
			9223372036854775807)
		ORDER BY m.seq LIMIT $2)`

// pruneBatch bounds the entries one prune statement deletes: each is a
// writer job of its own, so a large first prune does not hold up the
// messages arriving.
const pruneBatch = 2000

// PruneInbound implements store.InboundLog.
func (d *DB) PruneInbound(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		n, err := d.execCount(qPruneInbound, millis(before), pruneBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune inbound log: %w", err)
		}
		if n < pruneBatch {
			return total, nil
		}
	}
}

// execCount runs one writing statement as a job and reports the rows it
// touched.
func (d *DB) execCount(query string, args ...any) (int64, error) {
	var tag pgconn.CommandTag
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		tag, err = tx.Exec(ctx, query, args...)
		return err
	}, true, false)
	return tag.RowsAffected(), err
}

// ClaimDedup implements store.Dedup.
func (d *DB) ClaimDedup(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	t := now()
	n, err := d.execCount(qClaim, key, millis(t.Add(ttl)), millis(t))
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return n == 1, nil
}

// ReleaseDedup implements store.Dedup.
func (d *DB) ReleaseDedup(ctx context.Context, key string) error {
	if _, err := d.execCount(`DELETE FROM dedup WHERE key = $1`, key); err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// PruneDedup implements store.Dedup.
func (d *DB) PruneDedup(ctx context.Context) (int64, error) {
	n, err := d.execCount(`DELETE FROM dedup WHERE expires_at <= $1`, millis(now()))
	if err != nil {
		return 0, fmt.Errorf("prune dedup: %w", err)
	}
	return n, nil
}
