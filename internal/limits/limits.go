// Package limits holds turns over the configured caps: the turns a person
// or a chat may start in a minute and the model tokens they may spend in a
// day. The minute windows live in memory (a window per person and per
// chat, forgotten once it is over); the tokens are counted per day in the
// store, and in memory for the people and chats a daily budget applies to.
package limits

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
)

// Limit is one set of caps; 0 means no cap.
type Limit struct {
	MessagesPerMinute int
	TokensPerDay      int64
	// MessagesKey and TokensKey, when set, are the configuration keys the
	// two caps were set at (a chat's own, such as
	// "channels.onebot.groups.123.limits.perUser.messagesPerMinute"); the
	// top-level limits' keys when empty.
	MessagesKey, TokensKey string
}

// Settings are the caps that apply to one message: its sender's and its
// chat's.
type Settings struct {
	PerUser, PerChat Limit
}

// Zero reports whether s caps nothing.
func (s Settings) Zero() bool { return s.PerUser.zero() && s.PerChat.zero() }

func (l Limit) zero() bool { return l.MessagesPerMinute == 0 && l.TokensPerDay == 0 }

// Scopes and kinds of limits, as their configuration keys name them.
const (
	ScopeUser    = "perUser"
	ScopeChat    = "perChat"
	KindMessages = "messagesPerMinute"
	KindTokens   = "tokensPerDay"
)

// Window is how long a person's or a chat's turns are counted for
// messagesPerMinute, from the first of them.
const Window = time.Minute

// Verdict says whether a turn may run and, when it may not, which limit
// held it and until when.
type Verdict struct {
	// Scope and Kind name the limit that held the turn (ScopeUser,
	// KindMessages, …); both empty when the turn may run. Key is its
	// configuration key when a chat set it (see Limit).
	Scope, Kind, Key string
	// Limit is the limit's value, Used what was counted against it.
	Limit, Used int64
	// Resets is when the limit lets turns through again: the end of the
	// minute window, or the next midnight.
	Resets time.Time
	// Notify is true for the first turn held in this window (this day,
	// for tokens): a direct chat is told then, and only then.
	Notify bool
}

// Held reports whether the turn may not run.
func (v Verdict) Held() bool { return v.Kind != "" }

// Setting is the configuration key of the limit that held the turn, such
// as "limits.perUser.messagesPerMinute".
func (v Verdict) Setting() string {
	if v.Key != "" {
		return v.Key
	}
	return "limits." + v.Scope + "." + v.Kind
}

// Detail says, for the trace, which limit held the turn and when it
// resets, the time given in loc.
func (v Verdict) Detail(loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	used := fmt.Sprintf("%d turn(s) in the window", v.Used)
	if v.Kind == KindTokens {
		used = fmt.Sprintf("%d tokens used today", v.Used)
	}
	return fmt.Sprintf("%s = %d reached (%s); no model call; resets at %s",
		v.Setting(), v.Limit, used, v.Resets.In(loc).Format(time.DateTime+" MST"))
}

// UserKey names m's sender for counting, "user:<channel>:<id>"; empty for
// a turn nobody sent (a digest).
func UserKey(m msg.Message) string {
	if m.Sender.ID == "" {
		return ""
	}
	return "user:" + string(m.Channel) + ":" + string(m.Sender.ID)
}

// ChatKey names m's chat for counting, "chat:<channel>:<account>:<peer>".
func ChatKey(m msg.Message) string { return "chat:" + trace.ChatOf(m.Channel, m.Account, m.Peer) }

// Options configure a Limiter.
type Options struct {
	// Settings returns the caps that apply to a message; nil caps nothing.
	Settings func(msg.Message) Settings
	// Store keeps the tokens spent per day; without one they are counted
	// in memory only.
	Store store.TokenUse
	// Location is the timezone days are counted in; nil means local.
	Location *time.Location
	Logger   *slog.Logger
}

// Limiter counts turns and tokens and holds the turns over a cap. It is
// safe for concurrent use; the zero of *Limiter (nil) holds nothing and
// counts nothing.
type Limiter struct {
	opts Options
	log  *slog.Logger

	mu sync.Mutex
	// windows are the minute windows by key ("<scope>:<user or chat key>").
	windows map[string]*window
	// swept is when windows were last cleared of finished ones.
	swept time.Time
	// day is the day budgets count; budgets are today's counts of the keys
	// a tokensPerDay cap applies to.
	day     string
	budgets map[string]*budget
}

// window counts the turns started since start.
type window struct {
	start    time.Time
	n        int
	notified bool
}

// budget is one key's tokens of the day.
type budget struct {
	used     int64
	notified bool
	// ready is closed once the day's count was read from the store.
	ready chan struct{}
	err   error
}

// New returns a Limiter.
func New(o Options) *Limiter {
	if o.Location == nil {
		o.Location = time.Local
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Limiter{opts: o, log: log.With("component", "limits"), windows: map[string]*window{}, budgets: map[string]*budget{}}
}

// Day returns the day t falls on in the limiter's timezone, as the store
// counts it.
func (l *Limiter) Day(t time.Time) string { return t.In(l.opts.Location).Format(time.DateOnly) }

// nextDay returns the midnight after t in the limiter's timezone.
func (l *Limiter) nextDay(t time.Time) time.Time {
	y, m, d := t.In(l.opts.Location).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, l.opts.Location)
}

// settings returns the caps of m.
func (l *Limiter) settings(m msg.Message) Settings {
	if l.opts.Settings == nil {
		return Settings{}
	}
	return l.opts.Settings(m)
}

// check is one cap to check: its scope, its key and its value.
type check struct {
	scope, key string
	limit      Limit
}

// checks lists the caps that apply to m, the sender's first. A turn
// nobody sent (a digest) has no sender's caps and starts no turn of a
// person or a chat: only the chat's daily budget applies to it.
func (l *Limiter) checks(m msg.Message) []check {
	s := l.settings(m)
	if s.Zero() {
		return nil
	}
	var out []check
	if u := UserKey(m); u != "" {
		out = append(out, check{ScopeUser, u, s.PerUser})
	} else {
		s.PerChat.MessagesPerMinute = 0
	}
	return append(out, check{ScopeChat, ChatKey(m), s.PerChat})
}

// Admit decides whether m may start a turn: every daily budget that
// applies has tokens left, and every minute window room for one more
// turn, which it then counts. A turn held is not counted.
func (l *Limiter) Admit(ctx context.Context, m msg.Message) (Verdict, error) {
	if l == nil {
		return Verdict{}, nil
	}
	checks := l.checks(m)
	if len(checks) == 0 {
		return Verdict{}, nil
	}
	now := time.Now()
	for _, c := range checks {
		if c.limit.TokensPerDay <= 0 {
			continue
		}
		v, err := l.spent(ctx, now, c)
		if err != nil || v.Held() {
			return v, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	for _, c := range checks {
		n := c.limit.MessagesPerMinute
		if n <= 0 {
			continue
		}
		w := l.windows[c.scope+":"+c.key]
		if w == nil || !now.Before(w.start.Add(Window)) || w.n < n {
			continue
		}
		v := Verdict{Scope: c.scope, Kind: KindMessages, Key: c.limit.MessagesKey, Limit: int64(n), Used: int64(w.n), Resets: w.start.Add(Window), Notify: !w.notified}
		w.notified = true
		return v, nil
	}
	for _, c := range checks {
		if c.limit.MessagesPerMinute <= 0 {
			continue
		}
		k := c.scope + ":" + c.key
		w := l.windows[k]
		if w == nil || !now.Before(w.start.Add(Window)) {
			w = &window{start: now}
			l.windows[k] = w
		}
		w.n++
	}
	return Verdict{}, nil
}

// sweep forgets the windows that are over, at most once a window, so the
// windows held are those of the keys active in the last two minutes; l.mu
// is held.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < Window {
		return
	}
	l.swept = now
	for k, w := range l.windows {
		if !now.Before(w.start.Add(Window)) {
			delete(l.windows, k)
		}
	}
}

// spent checks c's daily budget, reading the day's count from the store
// the first time the key's budget is asked for that day.
func (l *Limiter) spent(ctx context.Context, now time.Time, c check) (Verdict, error) {
	day := l.Day(now)
	l.mu.Lock()
	l.turnDay(day)
	b := l.budgets[c.key]
	load := b == nil
	if load {
		b = &budget{ready: make(chan struct{})}
		l.budgets[c.key] = b
	}
	l.mu.Unlock()
	if load {
		var stored int64
		var err error
		if l.opts.Store != nil {
			var got map[string]int64
			got, err = l.opts.Store.TokensUsed(context.WithoutCancel(ctx), day, c.key)
			stored = got[c.key]
		}
		l.mu.Lock()
		// What was spent while the count was read was added to used
		// already (see Spend); should the read have seen it too, it counts
		// twice, which holds turns early rather than late, and only for
		// turns that end during the day's first read of their key.
		b.used += stored
		b.err = err
		if err != nil && l.budgets[c.key] == b {
			delete(l.budgets, c.key) // read it again next time
		}
		l.mu.Unlock()
		close(b.ready)
	}
	select {
	case <-b.ready:
	case <-ctx.Done():
		return Verdict{}, ctx.Err()
	}
	if b.err != nil {
		return Verdict{}, fmt.Errorf("limits: tokens of %s on %s: %w", c.key, day, b.err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b.used < c.limit.TokensPerDay {
		return Verdict{}, nil
	}
	v := Verdict{Scope: c.scope, Kind: KindTokens, Key: c.limit.TokensKey, Limit: c.limit.TokensPerDay, Used: b.used, Resets: l.nextDay(now), Notify: !b.notified}
	b.notified = true
	return v, nil
}

// turnDay starts counting day, forgetting the budgets of the day before;
// l.mu is held.
func (l *Limiter) turnDay(day string) {
	if l.day != day {
		l.day = day
		clear(l.budgets)
	}
}

// Spend adds the tokens a turn for m used to its sender's and its chat's
// counts of today: in memory where a budget is kept, and posted to the
// store once for both.
func (l *Limiter) Spend(ctx context.Context, m msg.Message, tokens int64) {
	if l == nil || tokens <= 0 {
		return
	}
	keys := make([]string, 0, 2)
	if u := UserKey(m); u != "" {
		keys = append(keys, u)
	}
	keys = append(keys, ChatKey(m))
	now := time.Now()
	day := l.Day(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turnDay(day)
	for _, k := range keys {
		if b := l.budgets[k]; b != nil {
			b.used += tokens
		}
	}
	if l.opts.Store == nil {
		return
	}
	// Posted under the lock, so a budget read after it was created sees
	// it either in memory or in the store, never in neither.
	if err := l.opts.Store.AddTokens(context.WithoutCancel(ctx), day, tokens, keys...); err != nil {
		l.log.Warn("token use not counted", "err", err, "tokens", tokens)
	}
}

// Use is what a person and a chat spent today, and their daily budgets
// (0: none).
type Use struct {
	Day                    string
	User, Chat             int64
	UserBudget, ChatBudget int64
}

// Today returns what m's sender and chat spent today.
func (l *Limiter) Today(ctx context.Context, m msg.Message) (Use, error) {
	if l == nil {
		return Use{}, nil
	}
	s := l.settings(m)
	u := Use{Day: l.Day(time.Now()), UserBudget: s.PerUser.TokensPerDay, ChatBudget: s.PerChat.TokensPerDay}
	if l.opts.Store == nil {
		return u, nil
	}
	user, chat := UserKey(m), ChatKey(m)
	keys := []string{chat}
	if user != "" {
		keys = append(keys, user)
	}
	got, err := l.opts.Store.TokensUsed(ctx, u.Day, keys...)
	if err != nil {
		return u, fmt.Errorf("limits: tokens of today: %w", err)
	}
	u.User, u.Chat = got[user], got[chat]
	return u, nil
}

// Top returns today's largest counts of the users and of the chats, at
// most n of each, their keys without the "user:" and "chat:" prefixes.
func (l *Limiter) Top(ctx context.Context, n int) (day string, users, chats []store.TokenCount, err error) {
	if l == nil {
		return "", nil, nil, nil
	}
	day = l.Day(time.Now())
	if l.opts.Store == nil {
		return day, nil, nil, nil
	}
	if users, err = l.opts.Store.TopTokenUse(ctx, day, "user:", n); err != nil {
		return day, nil, nil, fmt.Errorf("limits: top users: %w", err)
	}
	if chats, err = l.opts.Store.TopTokenUse(ctx, day, "chat:", n); err != nil {
		return day, nil, nil, fmt.Errorf("limits: top chats: %w", err)
	}
	for i := range users {
		users[i].Key = users[i].Key[len("user:"):]
	}
	for i := range chats {
		chats[i].Key = chats[i].Key[len("chat:"):]
	}
	return day, users, chats, nil
}

// KeepDays is how many days of token counts Prune keeps, today included.
const KeepDays = 31

// Prune deletes the token counts of the days before the last KeepDays.
func (l *Limiter) Prune(ctx context.Context) (int64, error) {
	if l == nil || l.opts.Store == nil {
		return 0, nil
	}
	y, m, d := time.Now().In(l.opts.Location).Date()
	first := time.Date(y, m, d-KeepDays+1, 0, 0, 0, 0, l.opts.Location).Format(time.DateOnly)
	n, err := l.opts.Store.PruneTokenUse(ctx, first)
	if err != nil {
		return 0, fmt.Errorf("limits: prune token counts: %w", err)
	}
	return n, nil
}
