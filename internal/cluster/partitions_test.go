package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPartitionOf(t *testing.T) {
	// FNV-1a 32-bit: these values are stored state and must never change.
	for _, tc := range []struct {
		parts int
		key   string
		want  int
	}{
		{32, "", 2166136261 % 32},
		{32, "a", 0xe40c292c % 32},
		{32, "onebot/main/group:700000001", -1},
		{7, "feishu/x/oc_1", -1},
		{1, "anything", 0},
		{0, "anything", 0},
	} {
		got := PartitionOf(tc.parts, tc.key)
		if tc.want >= 0 && got != tc.want {
			t.Errorf("PartitionOf(%d, %q) = %d, want %d", tc.parts, tc.key, got, tc.want)
		}
		if got < 0 || got >= max(tc.parts, 1) || got != PartitionOf(tc.parts, tc.key) {
			t.Errorf("PartitionOf(%d, %q) = %d, not a stable partition", tc.parts, tc.key, got)
		}
	}
}

// owners tracks which node runs each partition and fails the test when two
// do at once.
type owners struct {
	t  *testing.T
	mu sync.Mutex
	by map[int]string
}

func (o *owners) run(node string) func(ctx context.Context, p int, l Lease) {
	return func(ctx context.Context, p int, l Lease) {
		o.mu.Lock()
		if other, ok := o.by[p]; ok {
			o.t.Errorf("partition %d run by %s while %s runs it", p, node, other)
		}
		o.by[p] = node
		o.mu.Unlock()
		<-ctx.Done()
		o.mu.Lock()
		delete(o.by, p)
		o.mu.Unlock()
	}
}

// counts returns how many partitions each node runs.
func (o *owners) counts() (map[string]int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := map[string]int{}
	for _, n := range o.by {
		c[n]++
	}
	return c, len(o.by)
}

// balanced reports whether all parts partitions are run and each of nodes
// runs between floor and ceil of its share.
func (o *owners) balanced(parts int, nodes ...string) bool {
	c, total := o.counts()
	if total != parts {
		return false
	}
	for _, n := range nodes {
		if c[n] < parts/len(nodes) || c[n] > (parts+len(nodes)-1)/len(nodes) {
			return false
		}
	}
	return len(c) == len(nodes)
}

// One, two, then three nodes share the partitions, every partition with one
// owner at every moment; when a node dies the others take its partitions.
func TestRunPartitionsBalance(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	const parts = 8
	ttl := 500 * time.Millisecond
	own := &owners{t: t, by: map[int]string{}}
	g := newGroup(t)
	nodes := map[string]*Node{}
	start := func(name string) {
		n := openNode(t, Options{URL: ts.url(), Instance: name, Prefix: prefix, LeaseTTL: ttl, Partitions: parts})
		nodes[name] = n
		g.spawn(func() {
			err := n.RunPartitions(g.ctx, own.run(name))
			if err != nil && !errors.Is(err, errConnClosed) && err != ErrClosed {
				t.Errorf("RunPartitions on %s: %v", name, err)
			}
		})
	}
	show := func() string { c, _ := own.counts(); return fmt.Sprint(c) }

	start("a")
	await(t, 10*time.Second, "a to run all partitions", func() bool { return own.balanced(parts, "a") })
	start("b")
	await(t, 15*time.Second, "a and b to share", func() bool { return own.balanced(parts, "a", "b") })
	start("c")
	await(t, 15*time.Second, "a, b and c to share", func() bool { return own.balanced(parts, "a", "b", "c") })
	t.Logf("three nodes: %s", show())
	if m := nodes["a"].Status().Members; strings.Join(m, ",") != "a,b,c" {
		t.Errorf("members %v, want a,b,c", m)
	}

	// c dies: its connection goes away without releasing anything.
	nodes["c"].nc.Close()
	await(t, 15*time.Second, "a and b to take c's partitions", func() bool { return own.balanced(parts, "a", "b") })
	t.Logf("after c died: %s", show())
}

// A second live process with the same instance name cannot run partitions.
func TestRunPartitionsInstanceClash(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	ttl := 400 * time.Millisecond
	a1 := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl, Partitions: 4})
	a2 := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl, Partitions: 4})
	g := newGroup(t)
	running := make(chan int, 4)
	g.spawn(func() {
		if err := a1.RunPartitions(g.ctx, func(ctx context.Context, p int, l Lease) {
			running <- p
			<-ctx.Done()
		}); err != nil && err != ErrClosed {
			t.Errorf("first RunPartitions: %v", err)
		}
	})
	recv(t, running, 10*time.Second, "the first process to run a partition")

	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	err := a2.RunPartitions(ctx, func(ctx context.Context, p int, l Lease) {
		t.Errorf("second process runs partition %d", p)
	})
	if !errors.Is(err, ErrInstanceTaken) || !strings.Contains(err.Error(), "cluster.instance") {
		t.Fatalf("second RunPartitions: %v, want ErrInstanceTaken naming cluster.instance", err)
	}
}

// A process restarting under its name while its previous member lease is
// still there waits for it to expire, then runs.
func TestRunPartitionsRestartSameName(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	ttl := 400 * time.Millisecond
	old := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl, Partitions: 2})
	g := newGroup(t)
	running := make(chan int, 4)
	g.spawn(func() {
		_ = old.RunPartitions(g.ctx, func(ctx context.Context, p int, l Lease) {
			running <- p
			<-ctx.Done()
		})
	})
	recv(t, running, 10*time.Second, "the old process to run a partition")
	old.nc.Close() // dies without releasing

	n := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl, Partitions: 2})
	got := make(chan int, 4)
	g.spawn(func() {
		if err := n.RunPartitions(g.ctx, func(ctx context.Context, p int, l Lease) {
			got <- p
			<-ctx.Done()
		}); err != nil && err != ErrClosed {
			t.Errorf("RunPartitions after restart: %v", err)
		}
	})
	recv(t, got, 10*time.Second, "the restarted process to run a partition")
}

func TestToken(t *testing.T) {
	for in, want := range map[string]string{
		"":             "=",
		"cli_a1b2-C3":  "cli_a1b2-C3",
		"group:7000.1": "group=3A7000=2E1",
		"飞书":           "=E9=A3=9E=E4=B9=A6",
		"a=b":          "a=3Db",
		"oc_x y/z\n":   "oc_x=20y=2Fz=0A",
	} {
		got := Token(in)
		if got != want {
			t.Errorf("Token(%q) = %q, want %q", in, got, want)
		}
		if !leaseKeyRE.MatchString("conn." + got) {
			t.Errorf("Token(%q) = %q is not a valid name token", in, got)
		}
	}
}
