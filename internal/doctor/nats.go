package doctor

import (
	"context"
	"fmt"
	"net/url"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pincerbot/pincer/internal/config"
)

// checkNATS connects to the cluster's NATS server and asks JetStream for
// the account's limits: the cluster mode needs JetStream. It creates
// nothing: pincer serve makes its buckets and stream.
func checkNATS(ctx context.Context, c config.Cluster) Result {
	res := Result{Name: "cluster"}
	where := c.NATS.URL.Value()
	if u, err := url.Parse(where); err == nil {
		u.User = nil // never print a password
		where = u.String()
	}
	nc, err := nats.Connect(c.NATS.URL.Value(), nats.Name("pincer doctor"), nats.NoReconnect())
	if err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("NATS at %s: %v", where, rootCause(err))
		res.Hint = "check that nats-server runs with JetStream (nats-server -js) and that cluster.nats.url names its host and port"
		return res
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.AccountInfo(ctx)
	}
	if err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("NATS %s at %s has no JetStream: %v", nc.ConnectedServerVersion(), where, err)
		res.Hint = "start nats-server with JetStream enabled (-js, and a store directory on disk)"
		return res
	}
	res.Status = OK
	res.Detail = fmt.Sprintf("NATS %s at %s with JetStream; instance %s, %d partitions, leases of %d ms", nc.ConnectedServerVersion(), where, c.Instance, c.Partitions, c.LeaseTTLMs)
	return res
}
