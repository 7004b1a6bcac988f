package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
)

// collect runs a query as a job and collects its rows with scan.
func collect[T any](d *DB, query string, args []any, scan pgx.RowToFunc[T]) ([]T, error) {
	var out []T
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, query, args...)
		var err error
		out, err = pgx.CollectRows(rows, scan)
		return err
	}, false, false)
	return out, err
}

// Buffer implements store.Buffers: the entries are numbered now and
// posted.
func (d *DB) Buffer(ctx context.Context, entries []store.Buffered) ([]int64, error) {
	bodies, err := store.BufferedBodies(entries)
	if err != nil {
		return nil, err
	}
	ids, err := d.bufferID.take(ctx, len(entries))
	if err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	at := millis(now())
	stmts := make([]stmt, len(entries))
	for i, e := range entries {
		stmts[i] = stmt{sql: qBuffer, args: []any{ids[i], e.Scope, e.Kind, e.Key, string(e.Trigger), at, bodies[i]}}
	}
	if err := d.w.post(stmts...); err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	return ids, nil
}

// Unbuffer implements store.Buffers.
func (d *DB) Unbuffer(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := d.w.post(stmt{sql: qUnbuffer, args: []any{ids}}); err != nil {
		return fmt.Errorf("unbuffer: %w", err)
	}
	return nil
}

// BufferedEntries implements store.Buffers.
func (d *DB) BufferedEntries(ctx context.Context, scope string) ([]store.Buffered, error) {
	out, err := collect(d, `SELECT id, kind, key, trigger, at, body FROM buffered WHERE scope = $1 ORDER BY id`, []any{scope},
		func(row pgx.CollectableRow) (store.Buffered, error) {
			e := store.Buffered{Scope: scope}
			var at int64
			var trigger, body string
			if err := row.Scan(&e.ID, &e.Kind, &e.Key, &trigger, &at, &body); err != nil {
				return e, err
			}
			if err := json.Unmarshal([]byte(body), &e.Message); err != nil {
				return e, fmt.Errorf("entry %d: %w", e.ID, err)
			}
			e.Trigger, e.At = msg.TriggerReason(trigger), fromMillis(at)
			return e, nil
		})
	if err != nil {
		return nil, fmt.Errorf("buffered entries of %s: %w", scope, err)
	}
	return out, nil
}

const qRecordSent = `INSERT INTO sent (channel, account, message_id, sent_at) SELECT $1, $2, unnest($3::text[]), $4
	ON CONFLICT (channel, account, message_id) DO UPDATE SET sent_at = excluded.sent_at`

// RecordSent implements store.SentLog: posted, and read back from the
// table (a pincer sharing the database sees the ids this one sent).
func (d *DB) RecordSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, ids ...msg.MessageID) error {
	if len(ids) == 0 {
		return nil
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	if err := d.w.post(stmt{sql: qRecordSent, args: []any{string(ch), string(acct), s, millis(now())}}); err != nil {
		return fmt.Errorf("record sent %v: %w", ids, err)
	}
	return nil
}

// WasSent implements store.SentLog.
func (d *DB) WasSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, id msg.MessageID) (bool, error) {
	var found bool
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sent WHERE channel = $1 AND account = $2 AND message_id = $3)`,
			string(ch), string(acct), string(id)).Scan(&found)
	}, false, false)
	if err != nil {
		return false, fmt.Errorf("was %s sent: %w", id, err)
	}
	return found, nil
}

// PruneSent implements store.SentLog.
func (d *DB) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	n, err := d.execCount(`DELETE FROM sent WHERE sent_at < $1`, millis(before))
	if err != nil {
		return 0, fmt.Errorf("prune sent: %w", err)
	}
	return n, nil
}

// PendingTurns implements store.Journal.
func (d *DB) PendingTurns(ctx context.Context) ([]store.PendingTurn, error) {
	out, err := collect(d, `SELECT key, body, attempts, at FROM pending_turns ORDER BY at, n`, nil,
		func(row pgx.CollectableRow) (store.PendingTurn, error) {
			var p store.PendingTurn
			var at int64
			err := row.Scan(&p.Key, &p.Turn, &p.Attempts, &at)
			p.At = fromMillis(at)
			return p, err
		})
	if err != nil {
		return nil, fmt.Errorf("pending turns: %w", err)
	}
	return out, nil
}

// ResumeTurn implements store.Journal.
func (d *DB) ResumeTurn(ctx context.Context, key string) (int, error) {
	var n int
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `UPDATE pending_turns SET attempts = attempts + 1 WHERE key = $1 RETURNING attempts`, key).Scan(&n)
	}, true, false)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("resume turn %s: %w", key, err)
	}
	return n, nil
}

// FinishTurn implements store.Journal: posted.
func (d *DB) FinishTurn(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	if err := d.w.post(stmt{sql: `DELETE FROM pending_turns WHERE key = ANY($1)`, args: []any{append([]string(nil), keys...)}}); err != nil {
		return fmt.Errorf("finish turns %v: %w", keys, err)
	}
	return nil
}

const (
	qAddOutbox = `INSERT INTO outbox (id, channel, account, peer, body, sent, attempts, state, last_error, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 0, 0, $6, '', $7, $8) ON CONFLICT (id) DO NOTHING`
	qUpdateOutbox  = `UPDATE outbox SET sent = $1, attempts = $2, state = $3, last_error = $4, updated_at = $5 WHERE id = $6`
	outboxColumns  = `id, channel, body, sent, attempts, state, last_error, created_at, updated_at`
	qPendingOutbox = `SELECT ` + outboxColumns + ` FROM outbox WHERE channel = $1 AND account = $2 AND state = 'pending' ORDER BY created_at, n`
	qOutboxEntries = `SELECT ` + outboxColumns + ` FROM outbox WHERE starts_with(id, $1) ORDER BY created_at, n`
)

// AddOutbox implements store.Outbox: it returns once the entry, and
// everything handed in before it, is committed.
func (d *DB) AddOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	body, err := json.Marshal(e.Out)
	if err != nil {
		return false, fmt.Errorf("outbox %s: %w", e.ID, err)
	}
	var added bool
	err = d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		t := millis(now())
		tag, err := tx.Exec(ctx, qAddOutbox, e.ID, string(e.Channel), string(e.Out.Account), e.Out.Peer.String(),
			string(body), string(store.OutboxPending), t, t)
		added = tag.RowsAffected() == 1
		return err
	}, true, true)
	if err != nil {
		return false, fmt.Errorf("outbox %s: %w", e.ID, err)
	}
	return added, nil
}

// UpdateOutbox implements store.Outbox: durable, like AddOutbox.
func (d *DB) UpdateOutbox(ctx context.Context, id string, sent, attempts int, state store.OutboxState, lastErr string) error {
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, qUpdateOutbox, sent, attempts, string(state), lastErr, millis(now()), id)
		return err
	}, true, true)
	if err != nil {
		return fmt.Errorf("outbox %s: %w", id, err)
	}
	return nil
}

func scanOutbox(row pgx.CollectableRow) (store.OutboxEntry, error) {
	var e store.OutboxEntry
	var channel, body, state string
	var created, updated int64
	if err := row.Scan(&e.ID, &channel, &body, &e.Sent, &e.Attempts, &state, &e.LastError, &created, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(body), &e.Out); err != nil {
		return e, fmt.Errorf("%s: %w", e.ID, err)
	}
	e.Channel, e.State = msg.ChannelID(channel), store.OutboxState(state)
	e.Created, e.Updated = fromMillis(created), fromMillis(updated)
	return e, nil
}

// PendingOutbox implements store.Outbox.
func (d *DB) PendingOutbox(ctx context.Context, ch msg.ChannelID, acct msg.AccountID) ([]store.OutboxEntry, error) {
	out, err := collect(d, qPendingOutbox, []any{string(ch), string(acct)}, scanOutbox)
	if err != nil {
		return nil, fmt.Errorf("pending outbox: %w", err)
	}
	return out, nil
}

// HasOutbox implements store.Outbox.
func (d *DB) HasOutbox(ctx context.Context, prefix string) (bool, error) {
	var found bool
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE starts_with(id, $1))`, prefix).Scan(&found)
	}, false, false)
	if err != nil {
		return false, fmt.Errorf("outbox %s*: %w", prefix, err)
	}
	return found, nil
}

// OutboxEntries implements store.Outbox.
func (d *DB) OutboxEntries(ctx context.Context, prefix string) ([]store.OutboxEntry, error) {
	out, err := collect(d, qOutboxEntries, []any{prefix}, scanOutbox)
	if err != nil {
		return nil, fmt.Errorf("outbox %s*: %w", prefix, err)
	}
	return out, nil
}

// PruneOutbox implements store.Outbox.
func (d *DB) PruneOutbox(ctx context.Context, before time.Time) (int64, error) {
	n, err := d.execCount(`DELETE FROM outbox WHERE state != 'pending' AND updated_at < $1`, millis(before))
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return n, nil
}

var _ store.TokenUse = (*DB)(nil)

const qAddTokens = `INSERT INTO token_use (day, key, tokens) SELECT $1, unnest($2::text[]), $3
	ON CONFLICT (day, key) DO UPDATE SET tokens = token_use.tokens + excluded.tokens`

// AddTokens implements store.TokenUse: posted.
func (d *DB) AddTokens(ctx context.Context, day string, n int64, keys ...string) error {
	if n == 0 || len(keys) == 0 {
		return nil
	}
	if err := d.w.post(stmt{sql: qAddTokens, args: []any{day, append([]string(nil), keys...), n}}); err != nil {
		return fmt.Errorf("add tokens of %s: %w", day, err)
	}
	return nil
}

// TokensUsed implements store.TokenUse.
func (d *DB) TokensUsed(ctx context.Context, day string, keys ...string) (map[string]int64, error) {
	out := make(map[string]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	counts, err := collect(d, `SELECT key, tokens FROM token_use WHERE day = $1 AND key = ANY($2)`, []any{day, keys}, scanTokenCount)
	if err != nil {
		return nil, fmt.Errorf("tokens used on %s: %w", day, err)
	}
	for _, c := range counts {
		out[c.Key] = c.Tokens
	}
	return out, nil
}

func scanTokenCount(row pgx.CollectableRow) (store.TokenCount, error) {
	var c store.TokenCount
	err := row.Scan(&c.Key, &c.Tokens)
	return c, err
}

// TopTokenUse implements store.TokenUse.
func (d *DB) TopTokenUse(ctx context.Context, day, prefix string, limit int) ([]store.TokenCount, error) {
	out, err := collect(d, `SELECT key, tokens FROM token_use WHERE day = $1 AND starts_with(key, $2) ORDER BY tokens DESC, key LIMIT $3`,
		[]any{day, prefix, limit}, scanTokenCount)
	if err != nil {
		return nil, fmt.Errorf("token use on %s: %w", day, err)
	}
	return out, nil
}

// PruneTokenUse implements store.TokenUse.
func (d *DB) PruneTokenUse(ctx context.Context, before string) (int64, error) {
	n, err := d.execCount(`DELETE FROM token_use WHERE day < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("prune token use: %w", err)
	}
	return n, nil
}

var _ trace.Store = (*DB)(nil)

const qTraceRecord = `INSERT INTO traces (chat, msg, key, sender, preview, at, steps) VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT (chat, msg) DO UPDATE SET sender = excluded.sender, preview = excluded.preview, steps = excluded.steps`

// AddTraceRecords implements trace.Store: posted.
func (d *DB) AddTraceRecords(ctx context.Context, recs []trace.Record) error {
	stmts := make([]stmt, 0, len(recs))
	var buf []byte
	for _, r := range recs {
		key := string(r.Key.AppendJSON(buf[:0]))
		var err error
		if buf, err = trace.AppendStepsJSON(buf[:0], r.Steps); err != nil {
			return fmt.Errorf("trace of %s: %w", r.Key.ID, err)
		}
		stmts = append(stmts, stmt{sql: qTraceRecord, args: []any{r.Chat, string(r.Key.ID), key, r.Sender, r.Preview, millis(r.At), string(buf)}})
	}
	return d.w.post(stmts...)
}

// TraceRecords implements trace.Store.
func (d *DB) TraceRecords(ctx context.Context, chat string, id msg.MessageID, limit int) ([]trace.Record, error) {
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT key, sender, preview, at, steps FROM traces WHERE chat = $1 ORDER BY at DESC LIMIT $2`
	args := []any{chat, limit}
	if id != "" {
		q = `SELECT key, sender, preview, at, steps FROM traces WHERE chat = $1 AND msg = $2`
		args = []any{chat, string(id)}
	}
	out, err := collect(d, q, args, func(row pgx.CollectableRow) (trace.Record, error) {
		var key, steps string
		var at int64
		rec := trace.Record{Chat: chat}
		if err := row.Scan(&key, &rec.Sender, &rec.Preview, &at, &steps); err != nil {
			return rec, err
		}
		rec.At = fromMillis(at)
		if err := json.Unmarshal([]byte(key), &rec.Key); err != nil {
			return rec, fmt.Errorf("trace key %q: %w", key, err)
		}
		if err := json.Unmarshal([]byte(steps), &rec.Steps); err != nil {
			return rec, fmt.Errorf("trace steps of %s: %w", rec.Key.ID, err)
		}
		return rec, nil
	})
	if err != nil {
		return nil, fmt.Errorf("traces of %s: %w", chat, err)
	}
	return out, nil
}

// PruneTraces implements trace.Store.
func (d *DB) PruneTraces(ctx context.Context, before time.Time) error {
	if _, err := d.execCount(`DELETE FROM traces WHERE at < $1`, millis(before)); err != nil {
		return fmt.Errorf("prune traces: %w", err)
	}
	return nil
}
