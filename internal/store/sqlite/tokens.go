package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pincerbot/pincer/internal/store"
)

var _ store.TokenUse = (*DB)(nil)

// addTokens is the statement adding n tokens to each of keys keys of a
// day: one multi-row upsert, which applies whole or not at all by itself
// (see several), where a statement a key had needed a savepoint around them.
func addTokens(keys int) string {
	return `INSERT INTO token_use (day, key, tokens) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, keys-1) +
		` ON CONFLICT (day, key) DO UPDATE SET tokens = tokens + excluded.tokens`
}

// qAddTokens are the statements of one and of two keys, a person's and a
// chat's, as a turn counts them.
var qAddTokens = [...]string{1: addTokens(1), 2: addTokens(2)}

// AddTokens implements store.TokenUse: the counts are posted to the
// writer, which commits them with the batch they fall in; nobody waits.
func (d *DB) AddTokens(ctx context.Context, day string, n int64, keys ...string) error {
	if n == 0 || len(keys) == 0 {
		return nil
	}
	q := addTokens(len(keys))
	if len(keys) < len(qAddTokens) {
		q = qAddTokens[len(keys)]
	}
	args := make([]any, 0, 3*len(keys))
	for _, k := range keys {
		args = append(args, day, k, n)
	}
	err := d.w.post(func(tx *sql.Conn) error {
		_, err := d.exec(ctx, tx, q, args...)
		return err
	}, false)
	if err != nil {
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
	args := make([]any, 0, len(keys)+1)
	args = append(args, day)
	for _, k := range keys {
		args = append(args, k)
	}
	q := `SELECT key, tokens FROM token_use WHERE day = ? AND key IN (?` + strings.Repeat(", ?", len(keys)-1) + `)`
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
	err := d.each(ctx, `SELECT key, tokens FROM token_use WHERE day = ? AND key >= ? AND key < ? ORDER BY tokens DESC, key LIMIT ?`,
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

// PruneTokenUse implements store.TokenUse.
func (d *DB) PruneTokenUse(ctx context.Context, before string) (int64, error) {
	res, err := d.exec(ctx, nil, `DELETE FROM token_use WHERE day < ?`, before)
	if err != nil {
		return 0, fmt.Errorf("prune token use: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune token use: %w", err)
	}
	return n, nil
}
