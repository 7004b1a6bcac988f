package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qLogInbound = `INSERT INTO messages (seq, chat, message_id, views, logged_at, body, prev, enrich_pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qLogEntry   = `SELECT prev, views, logged_at, body, enrich_pending FROM messages WHERE seq = ?`
	qComplete   = `UPDATE messages SET body = ?, enrich_pending = 0 WHERE seq = ? AND chat = ?`
	qSaveChain  = `INSERT INTO chats (chat, last, views) VALUES (?, ?, ?)
		ON CONFLICT (chat) DO UPDATE SET last = max(last, excluded.last), views = views | excluded.views`
	qViewMark = `SELECT upto FROM view_marks WHERE chat = ? AND view = ?`
	qClaim    = `INSERT INTO dedup (key, expires_at) VALUES (?, ?)
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
// the turn consumes are one transaction. A key the claims in memory know
// to be free (see claims.go) is admitted without waiting for the writer:
// the transaction is handed in and committed with its batch, as it was
// when the caller waited for it to run; while the store's last write
// failed, every admission waits for its outcome.
func (d *DB) AdmitTurn(ctx context.Context, key string, ttl time.Duration, turn []byte, consume store.Consumed) (bool, error) {
	t := now()
	at, until := millis(t), millis(t.Add(ttl))
	free, err := d.claims.claim(key, at, until, d.health.Last() == nil, func() error {
		return d.w.post(func(tx *sql.Conn) error {
			admitted, err := d.admit(ctx, tx, key, at, until, turn, consume)
			if err == nil && !admitted {
				err = errClaimedInTable
			}
			if err != nil {
				return fmt.Errorf("admit %s: %w", key, err)
			}
			return nil
		}, true)
	})
	if err != nil {
		return false, fmt.Errorf("admit %s: %w", key, err)
	}
	if free {
		return true, nil
	}
	var admitted bool
	err = d.tx(ctx, func(tx *sql.Conn) error {
		var err error
		admitted, err = d.admit(ctx, tx, key, at, until, turn, consume)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("admit %s: %w", key, err)
	}
	return admitted, nil
}

// admit claims key until until (ms), at at, consumes and journals turn
// inside tx, as AdmitTurn's one transaction.
func (d *DB) admit(ctx context.Context, tx *sql.Conn, key string, at, until int64, turn []byte, consume store.Consumed) (bool, error) {
	held, err := d.consume(ctx, tx, consume)
	if err != nil {
		return false, err
	}
	if claimed, err := d.claimIn(ctx, tx, key, at, until); err != nil || !claimed {
		if err == nil {
			d.drop(held)
		}
		return false, err
	}
	if turn != nil {
		if _, err = d.exec(ctx, tx, qJournal, key, turn, at, d.journalN.Add(1)); err != nil {
			return false, err
		}
	}
	// Nothing of the job can fail now: the held entries it took go.
	d.drop(held)
	return true, nil
}

// consume removes the written buffered entries of c and applies its
// marks inside tx, and returns the entries of c still held, which the
// caller drops once nothing of its job can fail (see Buffer).
func (d *DB) consume(ctx context.Context, tx *sql.Conn, c store.Consumed) (held []int64, err error) {
	if held, err = d.unbuffer(ctx, tx, c.Entries); err != nil {
		return nil, err
	}
	return held, d.mark(ctx, tx, c.Marks)
}

func (d *DB) mark(ctx context.Context, tx *sql.Conn, marks []store.Mark) error {
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
	if err := d.tx(ctx, func(tx *sql.Conn) error { return d.mark(ctx, tx, marks) }); err != nil {
		return fmt.Errorf("advance views: %w", err)
	}
	return nil
}

// LogInbound implements store.InboundLog: the entry is numbered and
// linked to its chat's previous entry now, and written by the writer's
// next batch, without waiting for it.
func (d *DB) LogInbound(ctx context.Context, m msg.Message, views store.Views) (int64, error) {
	return d.logMessage(m, views, false)
}

// LogInboundPending implements store.InboundLog: LogInbound with the
// entry marked pending.
func (d *DB) LogInboundPending(ctx context.Context, m msg.Message, views store.Views) (int64, error) {
	return d.logMessage(m, views, true)
}

// logMessage encodes m and hands its entry in (see logRow).
func (d *DB) logMessage(m msg.Message, views store.Views, pending bool) (int64, error) {
	r := newLogRow()
	body, err := m.AppendJSON(r.body[:0])
	if err != nil {
		r.recycle()
		return 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	r.body = body
	return d.logRow(r, m, views, pending, nil)
}

// CompleteInbound implements store.InboundLog. The rewrite is not waited
// for: one a crash loses leaves the entry pending, which the next start
// completes again.
func (d *DB) CompleteInbound(ctx context.Context, seq int64, m msg.Message) error {
	body, err := m.AppendJSON(nil)
	if err != nil {
		return fmt.Errorf("complete inbound %s: %w", m.ID, err)
	}
	chat := chatKey(m.Channel, m.Account, m.Peer)
	if err := d.w.post(func(tx *sql.Conn) error {
		_, err := d.exec(ctx, tx, qComplete, body, seq, chat)
		return err
	}, false); err != nil {
		return fmt.Errorf("complete inbound %s: %w", m.ID, err)
	}
	return nil
}

// LogInboundBuffered implements store.InboundLog: the log entry and the
// buffer entry go to the writer as one job, written in one transaction
// (the entry as the batch commits, see Buffer).
func (d *DB) LogInboundBuffered(ctx context.Context, m msg.Message, views store.Views, b store.Buffered) (int64, int64, error) {
	r := newLogRow()
	body, err := m.AppendJSON(r.body[:0])
	if err != nil {
		r.recycle()
		return 0, 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	r.body = body
	// The buffer entry's copy: the row's buffer goes back to its pool
	// once the row is inserted.
	text := string(body)
	id, at := d.bufferID.Add(1), millis(now())
	seq, err := d.logRow(r, m, views, false, func(*sql.Conn) error {
		d.hold(heldEntry{id: id, scope: b.Scope, kind: b.Kind, key: b.Key, trigger: string(b.Trigger), at: at, body: text})
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return seq, id, nil
}

// logRow numbers and links m's log entry r, whose body is set, and hands
// it to the writer, with also, when set, to run in the same transaction
// right after it.
func (d *DB) logRow(r *logRow, m msg.Message, views store.Views, pending bool, also func(tx *sql.Conn) error) (int64, error) {
	r.chat, r.id, r.views, r.at, r.pending = chatKey(m.Channel, m.Account, m.Peer), string(m.ID), views, millis(now()), pending
	d.chainsMu.Lock()
	defer d.chainsMu.Unlock()
	h := d.chains[r.chat]
	if h == nil {
		h = &chain{}
		d.chains[r.chat] = h
	}
	r.seq, r.prev = d.seq.Add(1), h.last
	// Handed in under the lock, so a chat's entries reach the writer in
	// the order they link.
	seq := r.seq
	if err := d.w.postRow(r, also); err != nil {
		r.recycle()
		return 0, fmt.Errorf("log inbound %s: %w", m.ID, err)
	}
	// r is the writer's now.
	h.last, h.views = seq, h.views|views
	return seq, nil
}

// chain is where a chat's entries end: its last entry, and every view
// an entry of it was logged into.
type chain struct {
	last  int64
	views store.Views
}

// logRow is one entry of the inbound log on its way to the database.
// Rows and their bodies' buffers are recycled (see newLogRow) once
// inserted: the JSON of every message of a burst was garbage a moment
// after it was written.
type logRow struct {
	seq, prev int64
	chat, id  string
	views     store.Views
	at        int64
	body      []byte // the message's JSON
	pending   bool   // its content is still to be completed
}

var logRows sync.Pool

// maxPooledBody is the largest body buffer kept for another row: a huge
// message's is left to the garbage collector.
const maxPooledBody = 8 << 10

// newLogRow returns an empty row, its body buffer kept from an earlier
// one when there is one.
func newLogRow() *logRow {
	if r, ok := logRows.Get().(*logRow); ok {
		return r
	}
	return new(logRow)
}

// recycle empties r and puts it back; nothing may use r afterwards.
func (r *logRow) recycle() {
	body := r.body[:0]
	if cap(body) > maxPooledBody {
		body = nil
	}
	*r = logRow{body: body}
	logRows.Put(r)
}

// insertRows inserts log entries inside tx, one statement each (a
// statement of many rows would make SQLite keep a statement journal, a
// temporary file written page by page), notes the chats' new last
// entries for saveChains, and recycles the rows. The writer calls it.
//
// The insert runs on the driver's own prepared statement (see
// rawexec.go).
func (d *DB) insertRows(tx *sql.Conn, rows []*logRow) error {
	defer func() {
		for _, r := range rows {
			r.recycle()
		}
	}()
	return tx.Raw(func(dc any) error {
		for _, r := range rows {
			if _, err := d.raw.exec(dc, qLogInbound, []any{r.seq, r.chat, r.id, int64(r.views), r.at, r.body, r.prev, r.pending}); err != nil {
				return fmt.Errorf("log inbound %s: %w", r.id, err)
			}
			d.noteWritten(r.chat, r.seq, r.views)
		}
		return nil
	})
}

// noteWritten records that chat's entry seq, in views, is in the
// database, and that the chats table does not know it yet.
func (d *DB) noteWritten(chat string, seq int64, views store.Views) {
	h := d.written[chat]
	if h == nil {
		h = &chain{}
		d.written[chat] = h
	}
	h.last, h.views = max(h.last, seq), h.views|views
	if _, ok := d.unsaved[chat]; !ok {
		d.unsaved[chat] = seq
	}
	d.maxWritten = max(d.maxWritten, seq)
}

// The chats table — where each chat's entries end — is saved lazily: a
// chat's row changes with every message, and one row a message, each on a
// page of its own in a table of thousands of chats, was the most of what a
// steady trickle wrote. Instead the rows of the chats that changed are
// written every chainsSaveEvery, chainsPerBatch a batch (half a
// millisecond of the writer's, which a turn waiting for it may feel, not
// the ten a whole save would take), and the meta row chains_upto
// says up to which entry the table is complete: Open reads the entries
// after it, a few seconds of them at most, to find the rest. A clean
// close saves everything.
//
// A save writes the chats in key order, so each batch's rows are
// neighbours on a few pages of the table: taken as they come, each
// batch of 128 out of thousands of chats touched nearly every page of
// it, and the pages a commit writes are most of what it costs.
const (
	chainsSaveEvery = 2 * time.Second
	chainsPerBatch  = 128
	qChainsUpto     = `INSERT INTO meta (key, value) VALUES ('chains_upto', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`
)

// saveChains writes some of the chats whose last entry changed since they
// were last written, when their turn has come, before the batch commits.
// The writer calls it.
func (d *DB) saveChains(tx *sql.Conn) error {
	if len(d.unsaved) == 0 {
		return nil
	}
	if d.saveOrder == nil {
		if time.Since(d.chainsSaved) < chainsSaveEvery {
			return nil
		}
		d.startSave()
	}
	return d.writeChains(tx, chainsPerBatch)
}

// startSave begins a save of the chats unsaved now, in key order; those
// that change while it is under way are left for the next.
func (d *DB) startSave() {
	d.saveOrder = slices.Sorted(maps.Keys(d.unsaved))
}

// writeChains writes up to limit of the chats of the save under way, in
// key order (for limit 0, every unsaved chat), and where the table is now
// complete up to. The writer calls it.
func (d *DB) writeChains(tx *sql.Conn, limit int) error {
	ctx := context.Background()
	write := func(chat string) error {
		h := d.written[chat]
		if _, err := d.exec(ctx, tx, qSaveChain, chat, h.last, int64(h.views)); err != nil {
			return fmt.Errorf("chat %q: %w", chat, err)
		}
		delete(d.unsaved, chat)
		return nil
	}
	if limit == 0 {
		for chat := range d.unsaved {
			if err := write(chat); err != nil {
				return err
			}
		}
		d.saveOrder = d.saveOrder[:0]
	}
	for n := 0; n < limit && len(d.saveOrder) > 0; {
		chat := d.saveOrder[0]
		if _, ok := d.unsaved[chat]; ok {
			if err := write(chat); err != nil {
				return err
			}
			n++
		}
		d.saveOrder = d.saveOrder[1:]
	}
	upto := d.maxWritten
	for _, first := range d.unsaved {
		upto = min(upto, first-1)
	}
	if _, err := d.exec(ctx, tx, qChainsUpto, strconv.FormatInt(upto, 10)); err != nil {
		return fmt.Errorf("chats: %w", err)
	}
	if len(d.saveOrder) == 0 {
		d.saveOrder, d.chainsSaved = nil, time.Now()
	}
	return nil
}

// saveAllChains writes every chat whose last entry changed, in a
// transaction of its own on the writer's connection once the writer has
// stopped.
func (d *DB) saveAllChains(ctx context.Context) error {
	if len(d.unsaved) == 0 {
		return nil
	}
	if _, err := d.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("save chats: %w", err)
	}
	if err := d.writeChains(d.conn, 0); err != nil {
		_, _ = d.conn.ExecContext(ctx, "ROLLBACK")
		return fmt.Errorf("save chats: %w", err)
	}
	if _, err := d.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("save chats: %w", err)
	}
	return nil
}

// loadChains reads where each chat's entries end: the chats table, and
// the entries logged after the point it is complete up to.
func (d *DB) loadChains(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, `SELECT chat, last, views FROM chats`)
	if err != nil {
		return fmt.Errorf("read chats: %w", err)
	}
	defer rows.Close()
	d.chains, d.written, d.unsaved = map[string]*chain{}, map[string]*chain{}, map[string]int64{}
	for rows.Next() {
		var chat string
		var last, views int64
		if err := rows.Scan(&chat, &last, &views); err != nil {
			return fmt.Errorf("read chats: %w", err)
		}
		d.written[chat] = &chain{last: last, views: store.Views(views)}
		d.maxWritten = max(d.maxWritten, last)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read chats: %w", err)
	}
	var upto int64
	if err := d.db.QueryRowContext(ctx, `SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'chains_upto'), 0)`).Scan(&upto); err != nil {
		return fmt.Errorf("read chats: %w", err)
	}
	rest, err := d.db.QueryContext(ctx, `SELECT seq, chat, views FROM messages WHERE seq > ? ORDER BY seq`, upto)
	if err != nil {
		return fmt.Errorf("read the log's last entries: %w", err)
	}
	defer rest.Close()
	for rest.Next() {
		var seq, views int64
		var chat string
		if err := rest.Scan(&seq, &chat, &views); err != nil {
			return fmt.Errorf("read the log's last entries: %w", err)
		}
		d.noteWritten(chat, seq, store.Views(views))
	}
	if err := rest.Err(); err != nil {
		return fmt.Errorf("read the log's last entries: %w", err)
	}
	for chat, h := range d.written {
		d.chains[chat] = &chain{last: h.last, views: h.views}
	}
	// What the log held before is saved with the first batches.
	if len(d.unsaved) > 0 {
		d.startSave()
	}
	return nil
}

// walk visits a chat's entries from last back, newest first, until visit
// returns false, the chain ends, or an entry is missing (one whose batch
// was lost). It runs inside a job.
func (d *DB) walk(ctx context.Context, tx *sql.Conn, last int64, visit func(store.LoggedMessage) bool) error {
	for seq := last; seq > 0; {
		var prev, views, logged int64
		var body []byte
		var pending bool
		err := d.queryRow(ctx, tx, qLogEntry, seq).Scan(&prev, &views, &logged, &body, &pending)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		lm := store.LoggedMessage{Seq: seq, Views: store.Views(views), LoggedAt: fromMillis(logged), Pending: pending}
		if err := json.Unmarshal(body, &lm.Message); err != nil {
			return fmt.Errorf("entry %d: %w", seq, err)
		}
		if !visit(lm) {
			return nil
		}
		seq = prev
	}
	return nil
}

// RecentInbound implements store.InboundLog.
func (d *DB) RecentInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, limit int) ([]store.LoggedMessage, error) {
	var out []store.LoggedMessage
	err := d.w.do(func(tx *sql.Conn) error {
		h := d.written[chatKey(ch, acct, peer)]
		if h == nil || limit <= 0 {
			return nil
		}
		// A message logged twice (an implementation that delivered it
		// again) counts once.
		seen := map[msg.MessageID]bool{}
		return d.walk(quick(ctx), tx, h.last, func(lm store.LoggedMessage) bool {
			if !seen[lm.Message.ID] {
				seen[lm.Message.ID] = true
				out = append(out, lm)
			}
			return len(out) < limit
		})
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("recent inbound of %s: %w", peer, err)
	}
	slices.Reverse(out)
	return out, nil
}

// FindInbound implements store.InboundLog: a walk back along the chat's
// entries, which stops at the first (newest) entry of id.
func (d *DB) FindInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, id msg.MessageID, within int) (store.LoggedMessage, bool, error) {
	var found store.LoggedMessage
	ok := false
	err := d.w.do(func(tx *sql.Conn) error {
		h := d.written[chatKey(ch, acct, peer)]
		if h == nil || within <= 0 {
			return nil
		}
		steps := 0
		return d.walk(quick(ctx), tx, h.last, func(lm store.LoggedMessage) bool {
			if lm.Message.ID == id {
				found, ok = lm, true
				return false
			}
			steps++
			return steps < within
		})
	}, false, false)
	if err != nil {
		return store.LoggedMessage{}, false, fmt.Errorf("find %s in the log of %s: %w", id, peer, err)
	}
	return found, ok, nil
}

// maxWalk bounds how far back HeldInbound looks for a view's entries in
// one chat: entries of other views (commands, say) in between count too.
func maxWalk(limit int) int { return 8*limit + 64 }

// HeldInbound implements store.InboundLog: it walks back the chats that
// ever had an entry in view, each from its last entry to its mark.
func (d *DB) HeldInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, view store.Views, limit int) ([]store.LoggedMessage, error) {
	prefix := chatPrefix(ch, acct)
	var out []store.LoggedMessage
	err := d.w.do(func(tx *sql.Conn) error {
		ctx := quick(ctx)
		var chats []string
		for chat, h := range d.written {
			if strings.HasPrefix(chat, prefix) && h.views&view != 0 {
				chats = append(chats, chat)
			}
		}
		slices.Sort(chats)
		for _, chat := range chats {
			var mark int64
			err := d.queryRow(ctx, tx, qViewMark, chat, int64(view)).Scan(&mark)
			if err != nil && err != sql.ErrNoRows {
				return fmt.Errorf("chat %q: %w", chat, err)
			}
			var held []store.LoggedMessage
			steps := 0
			err = d.walk(ctx, tx, d.written[chat].last, func(lm store.LoggedMessage) bool {
				if lm.Seq <= mark {
					return false
				}
				if lm.Views&view != 0 {
					held = append(held, lm)
				}
				steps++
				return len(held) < limit && steps < maxWalk(limit)
			})
			if err != nil {
				return fmt.Errorf("chat %q: %w", chat, err)
			}
			slices.Reverse(held)
			out = append(out, held...)
		}
		return nil
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("held inbound of %s/%s: %w", ch, acct, err)
	}
	return out, nil
}

// ClaimDedup implements store.Dedup.
func (d *DB) ClaimDedup(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	t := now()
	at, until := millis(t), millis(t.Add(ttl))
	// Free in memory (see claims.go): granted, the claim written with the
	// writer's batch.
	free, err := d.claims.claim(key, at, until, d.health.Last() == nil, func() error {
		return d.w.post(func(tx *sql.Conn) error {
			claimed, err := d.claimIn(ctx, tx, key, at, until)
			if err == nil && !claimed {
				err = errClaimedInTable
			}
			if err != nil {
				return fmt.Errorf("claim %s: %w", key, err)
			}
			return nil
		}, false)
	})
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	if free {
		return true, nil
	}
	claimed, err := d.claimIn(ctx, nil, key, at, until)
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return claimed, nil
}

// errClaimedInTable fails the write of a claim the claims in memory
// granted, of a key the table holds unexpired.
var errClaimedInTable = errors.New("its key, free in memory, was claimed in the table")

// claimIn claims key until until (ms), at at (ms), inside tx (nil: as a
// job of its own): false when the table holds it unexpired.
func (d *DB) claimIn(ctx context.Context, tx *sql.Conn, key string, at, until int64) (bool, error) {
	res, err := d.exec(ctx, tx, qClaim, key, until, at)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseDedup implements store.Dedup.
func (d *DB) ReleaseDedup(ctx context.Context, key string) error {
	if _, err := d.exec(ctx, nil, `DELETE FROM dedup WHERE key = ?`, key); err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// The dedup table has no index of its keys' expiry (see migration 19):
// the prune walks it in key order, dedupPrunePart keys a writer job, so
// that a table of a busy day's keys (a Feishu event's are kept seven
// hours) never holds up the writes arriving for more than a part's
// worth, about a millisecond.
const (
	dedupPrunePart = 1024
	// qDedupPartEnd is the last key of the part from key ?1 on (none: the
	// part is the rest of the table). A part's keys are those from its
	// first to its last; the next part's first is the smallest key after
	// that last, the last followed by a NUL.
	qDedupPartEnd = `SELECT key FROM dedup WHERE key >= ?1 ORDER BY key LIMIT 1 OFFSET ?2`
	qPruneDedup   = `DELETE FROM dedup WHERE key >= ?1 AND key <= ?2 AND expires_at <= ?3`
	qPruneDedupTo = `DELETE FROM dedup WHERE key >= ?1 AND expires_at <= ?2`
)

// PruneDedup implements store.Dedup.
func (d *DB) PruneDedup(ctx context.Context) (int64, error) {
	t := millis(now())
	var pruned int64
	from, done := "", false
	for !done {
		if err := ctx.Err(); err != nil {
			return pruned, fmt.Errorf("prune dedup: %w", err)
		}
		err := d.w.do(func(tx *sql.Conn) error {
			var end string
			var res sql.Result
			switch err := d.queryRow(ctx, tx, qDedupPartEnd, from, dedupPrunePart-1).Scan(&end); {
			case errors.Is(err, sql.ErrNoRows):
				done = true
				res, err = d.exec(ctx, tx, qPruneDedupTo, from, t)
				if err != nil {
					return err
				}
			case err != nil:
				return err
			default:
				if res, err = d.exec(ctx, tx, qPruneDedup, from, end, t); err != nil {
					return err
				}
				from = end + "\x00"
			}
			n, err := res.RowsAffected()
			pruned += n
			return err
		}, false, false)
		if err != nil {
			return pruned, fmt.Errorf("prune dedup: %w", err)
		}
	}
	d.claims.prune(t)
	return pruned, nil
}

// qPruneInbound deletes a chat's entries before before up to the earliest
// mark of the views the chat ever used (0 for a view never taken); a chat
// in no view has no such bound. Only the oldest part of a chat's chain goes,
// so a walk back from its last entry never meets a gap before what it
// needs.
//
// One statement deletes at most pruneBatch entries, the oldest first, and
// each is a writer job of its own: a large first prune does not hold up
// the messages arriving. Entries are numbered as they are logged, so the
// old ones are those before the first entry logged since before: found by
// a scan in key order that stops there (at once when nothing is old),
// where a filter on the time alone would read the whole table.
const qPruneInbound = `
	DELETE FROM messages WHERE seq IN (
		SELECT m.seq FROM messages m WHERE m.seq < coalesce((SELECT n.seq FROM messages n WHERE n.logged_at >= ?1 ORDER BY n.seq LIMIT 1), 9223372036854775807) AND m.seq <= (
			SELECT min(
				CASE WHEN c.views & 1 != 0 THEN coalesce((SELECT upto FROM view_marks v WHERE v.chat = c.chat AND v.view = 1), 0) ELSE 9223372036854775807 END,
				CASE WHEN c.views & 2 != 0 THEN coalesce((SELECT upto FROM view_marks v WHERE v.chat = c.chat AND v.view = 2), 0) ELSE 9223372036854775807 END)
			FROM chats c WHERE c.chat = m.chat)
		ORDER BY m.seq LIMIT ?2)`

// pruneBatch bounds the entries one prune statement deletes.
const pruneBatch = 2000

// PruneInbound implements store.InboundLog.
func (d *DB) PruneInbound(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := d.w.do(func(tx *sql.Conn) error {
			// The chats table must know every view its chats use first.
			if err := d.writeChains(tx, 0); err != nil {
				return err
			}
			res, err := d.exec(ctx, tx, qPruneInbound, millis(before), pruneBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		}, false, false)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune inbound log: %w", err)
		}
		if n < pruneBatch {
			return total, nil
		}
	}
}
