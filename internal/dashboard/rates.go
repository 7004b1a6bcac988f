package dashboard

import (
	"slices"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/trace"
)

// Rate buckets: the series covers RateSpan in buckets of RateBucket.
const (
	RateBucket  = 10 * time.Second
	RateSpan    = 10 * time.Minute
	rateBuckets = int(RateSpan / RateBucket)
)

// Series is the message and reply counts of the last RateSpan.
type Series struct {
	BucketSeconds int `json:"bucket_seconds"`
	// Points are oldest first; the last is the bucket now being filled.
	Points []Point `json:"points"`
}

// Point is one bucket of a Series.
type Point struct {
	// At is the start of the bucket.
	At time.Time `json:"at"`
	// Messages counts the inbound messages whose trace began in the
	// bucket.
	Messages int `json:"messages"`
	// Replies counts the deliveries with the outcome "sent".
	Replies int `json:"replies"`
}

// rates counts trace events into buckets.
type rates struct {
	mu      sync.Mutex
	buckets [rateBuckets]bucket
	// lastReply is the chat and detail of the previous event when it was
	// a sent delivery: a delivery answering several messages is recorded
	// on each of them, one after another, and is one reply.
	lastReply string
}

type bucket struct {
	n                 int64 // the bucket's number since the epoch
	messages, replies int
}

func bucketOf(t time.Time) int64 { return t.UnixNano() / int64(RateBucket) }

// slot is the place of bucket n in the ring.
func slot(n int64) int { return int((n%int64(rateBuckets) + int64(rateBuckets)) % int64(rateBuckets)) }

func isReply(s trace.Step) bool { return s.Stage == trace.StageDeliver && s.Outcome == "sent" }

// seed counts what recs hold, the records taken when counting began, and
// returns how many steps each had, so that the same steps arriving as
// events are not counted again. A delivery recorded on several messages of
// a chat within a second with the same detail is one reply.
func (r *rates) seed(recs []trace.Record) map[trace.Key]int {
	counted := make(map[trace.Key]int, len(recs))
	type sent struct {
		id string
		at time.Time
	}
	var replies []sent
	for _, rec := range recs {
		counted[rec.Key] = len(rec.Steps)
		if len(rec.Steps) > 0 {
			r.count(rec.Steps[0].At, 1, 0)
		}
		for _, s := range rec.Steps {
			if isReply(s) {
				replies = append(replies, sent{rec.Chat + "\x00" + s.Detail, s.At})
			}
		}
	}
	slices.SortFunc(replies, func(a, b sent) int { return a.at.Compare(b.at) })
	last := map[string]time.Time{}
	for _, s := range replies {
		if prev, ok := last[s.id]; ok && s.at.Sub(prev) < time.Second {
			continue
		}
		last[s.id] = s.at
		r.count(s.at, 0, 1)
	}
	return counted
}

// count adds to the bucket of t.
func (r *rates) count(t time.Time, messages, replies int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := bucketOf(t)
	b := &r.buckets[slot(n)]
	if b.n != n {
		*b = bucket{n: n}
	}
	b.messages += messages
	b.replies += replies
}

// add counts one step, from a light event (trace.SubscribeLight).
func (r *rates) add(ev trace.Event) {
	message := ev.Index == 0
	reply := isReply(ev.Step)
	if reply {
		id := ev.Record.Key.Chat() + "\x00" + ev.Step.Detail
		reply = id != r.lastReply
		r.lastReply = id
	} else {
		r.lastReply = ""
	}
	var m, n int
	if message {
		m = 1
	}
	if reply {
		n = 1
	}
	if m+n > 0 {
		r.count(ev.Step.At, m, n)
	}
}

// series returns the buckets of the RateSpan ending at now.
func (r *rates) series(now time.Time) Series {
	s := Series{BucketSeconds: int(RateBucket / time.Second), Points: make([]Point, rateBuckets)}
	last := bucketOf(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range rateBuckets {
		n := last - int64(rateBuckets-1-i)
		p := Point{At: time.Unix(0, n*int64(RateBucket)).UTC()}
		if b := r.buckets[slot(n)]; b.n == n {
			p.Messages, p.Replies = b.messages, b.replies
		}
		s.Points[i] = p
	}
	return s
}
