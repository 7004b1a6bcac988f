package config

import (
	"errors"
	"net/url"
	"time"
)

// Cluster runs several pincer processes as one, on NATS JetStream and a
// shared PostgreSQL store. Without nats.url, pincer is one process with
// no NATS at all.
type Cluster struct {
	// Instance names this process among the others; each must have its
	// own (the machine's host name is a good choice).
	Instance string `json:"instance"`
	// NATS is the server the instances meet on.
	NATS NATS `json:"nats"`
	// Partitions is how many parts the chats are divided into; each part
	// is owned by one instance at a time. Every instance must agree, and it
	// cannot change once the stream exists.
	Partitions int `json:"partitions"`
	// LeaseTTLMs is how long a lease (a connection's, a partition's)
	// outlives its holder's last renewal: the takeover time after a
	// holder dies. Every instance must agree.
	LeaseTTLMs int `json:"leaseTtlMs"`
}

// NATS locates the NATS server.
type NATS struct {
	// URL is nats://host:port (user:password@ may precede the host); it is
	// a secret when it carries a password.
	URL Secret `json:"url"`
}

// Cluster defaults.
const (
	DefaultClusterPartitions = 32
	DefaultLeaseTTLMs        = 6000
)

// Enabled reports whether the cluster mode is on.
func (c Cluster) Enabled() bool { return c.NATS.URL != "" }

// LeaseTTL returns LeaseTTLMs as a duration.
func (c Cluster) LeaseTTL() time.Duration { return ms(c.LeaseTTLMs) }

// Validate checks the cluster section on its own; validateCluster checks
// what it asks of the rest.
func (c Cluster) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if c.Instance == "" {
		errs = append(errs, problem("instance", "is required with nats.url: name this process, e.g. its host name"))
	} else if !validInstance(c.Instance) {
		errs = append(errs, problem("instance", "%q: use letters, digits, '-' and '_' only", c.Instance))
	}
	if u, err := url.Parse(c.NATS.URL.Value()); err != nil || u.Scheme == "" || u.Host == "" {
		errs = append(errs, problem("nats.url", "must be a URL like nats://127.0.0.1:4222"))
	}
	if c.Partitions < 1 || c.Partitions > 1024 {
		errs = append(errs, problem("partitions", "must be between 1 and 1024, got %d", c.Partitions))
	}
	if c.LeaseTTLMs < 1000 || c.LeaseTTLMs > 600000 {
		errs = append(errs, problem("leaseTtlMs", "must be between 1000 and 600000, got %d", c.LeaseTTLMs))
	}
	return errors.Join(errs...)
}

func validInstance(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return len(s) <= 64
}

// validateCluster refuses, by their key paths, the settings a cluster
// cannot honour: a store of one machine, sessions shared across chats
// (a session is written by the owner of its chat, and chats have
// different owners), and QQ connections that the implementation opens to
// one instance rather than one instance holding them.
func (c *Config) validateCluster() error {
	if !c.Cluster.Enabled() {
		return nil
	}
	var errs []error
	if c.Store.Driver != "postgres" {
		errs = append(errs, problem("store.driver", "must be 'postgres' with cluster.nats.url: the instances share one store"))
	}
	if c.Session.DMScope == "main" {
		errs = append(errs, problem("session.dmScope", "'main' is not supported with cluster.nats.url: direct chats of different instances would write one session; use 'per-peer'"))
	}
	if c.Session.GroupScope == "main" {
		errs = append(errs, problem("session.groupScope", "'main' is not supported with cluster.nats.url: groups of different instances would write one session; use 'per-group'"))
	}
	if c.Channels.Webchat.Enabled {
		errs = append(errs, problem("channels.webchat.enabled", "must be false with cluster.nats.url: the web chat answers on the instance a browser reached, which a cluster cannot hand over; the dashboard stays"))
	}
	for id, a := range c.Channels.OneBot.All() {
		if !a.Active() {
			continue
		}
		key := "channels.onebot."
		if id != "default" {
			key += "accounts." + id + "."
		}
		if a.ReverseWS.Enabled {
			errs = append(errs, problem(key+"reverseWs.enabled", "is not supported with cluster.nats.url yet: use a forward WebSocket (wsUrl), which one instance holds at a time"))
		}
		if a.HTTPPost.Enabled {
			errs = append(errs, problem(key+"httpPost.enabled", "is not supported with cluster.nats.url yet: use a forward WebSocket (wsUrl), which one instance holds at a time"))
		}
	}
	return errors.Join(errs...)
}
