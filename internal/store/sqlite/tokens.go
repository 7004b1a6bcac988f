package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

var _ store.TokenUse = (*DB)(nil)

// A turn's tokens are appended to token_log (a row a key), and the log
// is added to token_use, the counts of a day, every tokensFoldEvery, in
// key order, before a batch commits (see foldTokens): counted as they
// come, two counts a turn, each somewhere in a table of thousands, every
// turn wrote two pages of it. The reads add what the log holds to the
// counts. The log is durable as any write is: its rows are committed
// with their batch, and a fold moves them into the counts in one step.
//
// A fold takes at most tokensFoldRows rows of the log (the oldest), so a
// batch that folds (and every write queued behind it) waits half a
// millisecond or so however busy the bot is; while more remain, the next
// batch folds the next of them.
const (
	tokensFoldEvery = 2 * time.Second
	tokensFoldRows  = 256
)

// logTokens is the statement appending the rows of keys keys.
func logTokens(keys int) string {
	return `INSERT INTO token_log (day, key, tokens) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, keys-1)
}

// qLogTokens are the statements of one and of two keys, a person's and a
// chat's, as a turn counts them.
var qLogTokens = [...]string{1: logTokens(1), 2: logTokens(2)}

const (
	// qFoldBound is the last row of the log a fold takes (none: it takes
	// them all).
	qFoldBound = `SELECT rowid FROM token_log ORDER BY rowid LIMIT 1 OFFSET ?`
	// qFoldTokens adds the log up to row ?1 to the counts, in key order,
	// so that the rows of a fold are neighbours on a few pages;
	// qClearTokenLog then deletes those rows (see foldTokens).
	qFoldTokens = `INSERT INTO token_use (day, key, tokens)
		SELECT day, key, sum(tokens) FROM token_log WHERE rowid <= ?1 GROUP BY day, key ORDER BY day, key
		ON CONFLICT (day, key) DO UPDATE SET tokens = tokens + excluded.tokens`
	qClearTokenLog = `DELETE FROM token_log WHERE rowid <= ?1`
)

// AddTokens implements store.TokenUse: the counts are posted to the
// writer, which appends them to the log with the batch they fall in;
// nobody waits.
func (d *DB) AddTokens(ctx context.Context, day string, n int64, keys ...string) error {
	if n == 0 || len(keys) == 0 {
		return nil
	}
	q := logTokens(len(keys))
	if len(keys) < len(qLogTokens) {
		q = qLogTokens[len(keys)]
	}
	args := make([]any, 0, 3*len(keys))
	for _, k := range keys {
		args = append(args, day, k, n)
	}
	err := d.w.post(func(tx *sql.Conn) error {
		if _, err := d.exec(ctx, tx, q, args...); err != nil {
			return err
		}
		d.tokensLogged = true
		return nil
	}, false)
	if err != nil {
		return fmt.Errorf("add tokens of %s: %w", day, err)
	}
	return nil
}

// foldTokens adds the oldest tokensFoldRows rows of the token log to the
// counts and deletes them, when a turn logged tokens and the last fold
// that emptied the log is tokensFoldEvery old; with force, the whole log,
// a part at a time. Each part is folded under a savepoint, so that a
// failure leaves the counts and the log as they were. The writer calls
// it.
func (d *DB) foldTokens(tx *sql.Conn, force bool) error {
	if !force && (!d.tokensLogged || time.Since(d.tokensFolded) < tokensFoldEvery) {
		return nil
	}
	for {
		drained, err := d.foldPart(tx)
		if err != nil {
			return fmt.Errorf("fold token log: %w", err)
		}
		if drained {
			d.tokensLogged, d.tokensFolded = false, time.Now()
			return nil
		}
		if !force {
			return nil // the next batch folds the next part
		}
	}
}

// foldPart folds the oldest tokensFoldRows rows of the log, under a
// savepoint; drained is true when no row is left.
func (d *DB) foldPart(tx *sql.Conn) (drained bool, err error) {
	ctx := context.Background()
	bound := int64(math.MaxInt64)
	switch err := d.queryRow(ctx, tx, qFoldBound, tokensFoldRows-1).Scan(&bound); {
	case errors.Is(err, sql.ErrNoRows):
		drained = true
	case err != nil:
		return false, err
	}
	err = d.w.atomically(func() error {
		if _, err := d.exec(ctx, tx, qFoldTokens, bound); err != nil {
			return err
		}
		_, err := d.exec(ctx, tx, qClearTokenLog, bound)
		return err
	})
	return drained, err
}

// TokensUsed implements store.TokenUse: the counts, and what the log
// holds of them.
func (d *DB) TokensUsed(ctx context.Context, day string, keys ...string) (map[string]int64, error) {
	out := make(map[string]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	args := make([]any, 0, 2*len(keys)+2)
	for range 2 {
		args = append(args, day)
		for _, k := range keys {
			args = append(args, k)
		}
	}
	in := `key IN (?` + strings.Repeat(", ?", len(keys)-1) + `)`
	q := `SELECT key, sum(tokens) FROM (
		SELECT key, tokens FROM token_use WHERE day = ? AND ` + in + `
		UNION ALL SELECT key, tokens FROM token_log WHERE day = ? AND ` + in + `
	) GROUP BY key`
	err := d.each(ctx, q, args, func(rows *sql.Rows) error {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		out[k] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tokens used on %s: %w", day, err)
	}
	return out, nil
}

// TopTokenUse implements store.TokenUse.
func (d *DB) TopTokenUse(ctx context.Context, day, prefix string, limit int) ([]store.TokenCount, error) {
	var out []store.TokenCount
	// The range of keys that start with prefix: every key k with
	// prefix <= k < prefix followed by the largest code point.
	err := d.each(ctx, `SELECT key, sum(tokens) AS n FROM (
			SELECT key, tokens FROM token_use WHERE day = ?1 AND key >= ?2 AND key < ?3
			UNION ALL SELECT key, tokens FROM token_log WHERE day = ?1 AND key >= ?2 AND key < ?3
		) GROUP BY key ORDER BY n DESC, key LIMIT ?4`,
		[]any{day, prefix, prefix + "\U0010FFFF", limit}, func(rows *sql.Rows) error {
			var c store.TokenCount
			if err := rows.Scan(&c.Key, &c.Tokens); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("token use on %s: %w", day, err)
	}
	return out, nil
}

// PruneTokenUse implements store.TokenUse: the log is folded into the
// counts first, so that the counts it deletes are whole.
func (d *DB) PruneTokenUse(ctx context.Context, before string) (int64, error) {
	var n int64
	err := d.w.do(func(tx *sql.Conn) error {
		if err := d.foldTokens(tx, true); err != nil {
			return err
		}
		res, err := d.exec(ctx, tx, `DELETE FROM token_use WHERE day < ?`, before)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	}, false, false)
	if err != nil {
		return 0, fmt.Errorf("prune token use: %w", err)
	}
	return n, nil
}
