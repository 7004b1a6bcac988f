package gateway

import (
	"slices"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
)

// BenchmarkWebchatFirstByte measures pincer's own overhead from a web chat
// message in to the first streamed reply byte out, with the preview
// provider standing in for the model (it answers at once). Each iteration
// is a new browser, so transcripts do not grow. It reports the median and
// the 99th percentile in milliseconds.
func BenchmarkWebchatFirstByte(b *testing.B) {
	g := startGateway(&testing.T{}, config.Default())
	defer g.stop()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		c := webchattest.New(g.url)
		res, start, err := c.Post("hello", "")
		if err != nil {
			b.Fatal(err)
		}
		var first time.Duration
		err = webchattest.Read(res.Body, func(e webchattest.Event) bool {
			if e.Name == webchat.EventDelta && first == 0 {
				first = e.At.Sub(start)
			}
			return true
		})
		res.Body.Close()
		if err != nil || first == 0 {
			b.Fatalf("no delta (err %v)", err)
		}
		lat = append(lat, first)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
}
