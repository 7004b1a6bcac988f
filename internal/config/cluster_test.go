package config

import (
	"strings"
	"testing"
)

// TestClusterRefusesWhatItCannotHonour: the cluster mode names, by key
// path, every setting it needs changed.
func TestClusterRefusesWhatItCannotHonour(t *testing.T) {
	doc := `{
  cluster: { nats: { url: 'nats://127.0.0.1:4222' }, partitions: 0, leaseTtlMs: 10 },
  session: { groupScope: 'main', dmScope: 'main' },
  channels: { onebot: { enabled: true, reverseWs: { enabled: true },
    accounts: { b: { enabled: true, httpPost: { enabled: true } } } } },
}`
	_, err := Parse([]byte(doc), noEnv)
	if err == nil {
		t.Fatal("config accepted")
	}
	for _, want := range []string{
		"cluster.instance", "cluster.partitions", "cluster.leaseTtlMs", "store.driver",
		"session.groupScope", "session.dmScope", "channels.webchat.enabled",
		"channels.onebot.reverseWs.enabled", "channels.onebot.accounts.b.httpPost.enabled",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}
}

// TestClusterAccepted: a cluster on PostgreSQL with a forward WebSocket
// passes, with the defaults for what it leaves out; without nats.url the
// section is inert.
func TestClusterAccepted(t *testing.T) {
	doc := `{
  store: { driver: 'postgres', dsn: 'postgres://p@127.0.0.1/p' },
  cluster: { instance: 'node-a', nats: { url: 'nats://127.0.0.1:4222' } },
  channels: { webchat: { enabled: false }, onebot: { enabled: true, wsUrl: 'ws://127.0.0.1:3001' } },
}`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Cluster.Enabled() || cfg.Cluster.Partitions != DefaultClusterPartitions || cfg.Cluster.LeaseTTLMs != DefaultLeaseTTLMs {
		t.Errorf("cluster = %+v", cfg.Cluster)
	}
	cfg, err = Parse([]byte(`{cluster: {instance: 'bad name!'}}`), noEnv)
	if err != nil || cfg.Cluster.Enabled() {
		t.Errorf("a cluster section without nats.url must be inert: %v %+v", err, cfg.Cluster)
	}
	if _, err := Parse([]byte(`{store: {driver: 'postgres', dsn: 'x'}, cluster: {instance: 'bad name!', nats: {url: 'nats://h:1'}}}`), noEnv); err == nil || !strings.Contains(err.Error(), "cluster.instance") {
		t.Errorf("bad instance name: %v", err)
	}
}
