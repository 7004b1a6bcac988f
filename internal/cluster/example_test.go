package cluster_test

import (
	"context"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/pincerbot/pincer/internal/cluster"
)

// A gateway instance: it holds the connection of one account while it has
// the lease and serves sends for it, publishes inbound messages to their
// chat's partition, and consumes the partitions it owns.
func Example() {
	ctx := context.Background()
	node, err := cluster.Open(ctx, cluster.Options{URL: "nats://127.0.0.1:4222", Instance: "gw-1", Logger: slog.Default()})
	if err != nil {
		return
	}
	defer node.Close()

	g, ctx := errgroup.WithContext(ctx)
	conn := "conn.onebot." + cluster.Token("main")
	g.Go(func() error {
		return node.Hold(ctx, conn, func(ctx context.Context, l cluster.Lease) {
			// Connect the account; send only while ctx lasts, carrying
			// l.Token where a write must be fenced.
			_ = node.Serve(ctx, conn, func(ctx context.Context, req []byte) ([]byte, error) {
				return nil, nil // send req on the held connection
			})
		})
	})
	g.Go(func() error {
		return node.RunPartitions(ctx, func(ctx context.Context, p int, l cluster.Lease) {
			_ = node.Consume(ctx, p, func(ctx context.Context, seq uint64, data []byte, done func()) {
				// Store the message (idempotently), then:
				done()
			})
		})
	})

	// On any instance, for an inbound event:
	chat := "onebot/main/group:700000001"
	_ = node.Publish(ctx, cluster.PartitionOf(node.Partitions(), chat), "event-id", []byte("..."))
	// And to send through whichever instance holds the connection:
	_, _ = node.Request(ctx, conn, []byte("..."))

	_ = g.Wait()
}
