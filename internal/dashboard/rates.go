package dashboard

import (
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

// add counts one step.
func (r *rates) add(ev trace.Event) {
	message := len(ev.Record.Steps) == 1
	reply := ev.Step.Stage == trace.StageDeliver && ev.Step.Outcome == "sent"
	r.mu.Lock()
	defer r.mu.Unlock()
	var same bool
	if reply {
		id := ev.Record.Chat + "\x00" + ev.Step.Detail
		same = id == r.lastReply
		r.lastReply = id
	} else {
		r.lastReply = ""
	}
	if !message && (!reply || same) {
		return
	}
	n := bucketOf(ev.Step.At)
	b := &r.buckets[slot(n)]
	if b.n != n {
		*b = bucket{n: n}
	}
	if message {
		b.messages++
	}
	if reply && !same {
		b.replies++
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
