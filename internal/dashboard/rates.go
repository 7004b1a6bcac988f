package dashboard

import (
	"time"

	"github.com/pincerbot/pincer/internal/trace"
)

// Rate buckets: the series covers RateSpan in buckets of RateBucket, as
// the recorder counts them.
const (
	RateBucket = trace.CountBucket
	RateSpan   = trace.CountSpan
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

// series returns the recorder's counts of the RateSpan ending at now.
func series(rec *trace.Recorder, now time.Time) Series {
	start, messages, replies := rec.Counts(now)
	s := Series{BucketSeconds: int(RateBucket / time.Second), Points: make([]Point, len(messages))}
	for i := range messages {
		s.Points[i] = Point{At: start.Add(time.Duration(i) * RateBucket), Messages: messages[i], Replies: replies[i]}
	}
	return s
}
