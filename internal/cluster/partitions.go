package cluster

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrInstanceTaken is wrapped by the error RunPartitions returns when another
// live process uses the same instance name.
var ErrInstanceTaken = errors.New("cluster: instance name in use")

func partitionKey(p int) string { return partitionPrefix + strconv.Itoa(p) }

// RunPartitions keeps this instance holding its share of the partitions until
// ctx ends: it registers the instance as a member (a lease
// "member.<instance>"; while another live process holds the same name it
// fails with an error naming cluster.instance and wrapping ErrInstanceTaken),
// aims at ceil(partitions/members) partitions, takes free ones (starting at
// an offset derived from the instance name, so instances spread), and when
// members join gives back the ones over its share (cancelling their run,
// waiting, releasing). run is called for each partition won, with the
// partition's lease "part.<p>", exactly like Hold: its context ends when the
// lease is lost, given back, or ctx ends.
//
// A process that restarts under the same name before its previous member
// lease ran out waits up to one TTL for it. Call RunPartitions once per node
// at a time. RunPartitions returns nil when
// ctx ends, ErrClosed after Close, and an error when the connection was
// closed for good.
func (n *Node) RunPartitions(ctx context.Context, run func(ctx context.Context, p int, l Lease)) error {
	outer := ctx
	ctx, cancel := n.scope(ctx)
	defer cancel()
	key := memberPrefix + n.o.Instance
	rev, sent, err := n.acquireMember(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			return n.endErr(outer)
		}
		return err
	}
	memberErr := make(chan error, 1)
	go func() { memberErr <- n.keepMember(ctx, key, rev, sent) }()
	memberDone, err := n.managePartitions(ctx, run, memberErr)
	cancel()
	if !memberDone {
		if merr := <-memberErr; err == nil {
			err = merr
		}
	}
	if err != nil {
		return err
	}
	return n.endErr(outer)
}

// acquireMember wins the member lease key. When it is held, it waits for
// the entry to go away (a dead process's lease expires) and fails if the
// entry is renewed instead (a live process with the same name).
func (n *Node) acquireMember(ctx context.Context, key string) (uint64, time.Time, error) {
	var seen uint64
	for {
		rev, sent, err := n.tryAcquire(ctx, key)
		switch {
		case err == nil:
			return rev, sent, nil
		case ctx.Err() != nil:
			return 0, time.Time{}, ctx.Err()
		case errors.Is(err, errTaken):
			gctx, cancel := context.WithTimeout(ctx, n.opTimeout)
			e, gerr := n.leases.Get(gctx, key)
			cancel()
			if gerr != nil {
				if errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted) {
					continue
				}
				n.log.Debug("member lease lookup failed", "error", gerr)
				break
			}
			if bytes.Equal(e.Value(), n.value) {
				// Left over from this process (a release that failed):
				// take it back at its revision.
				uctx, cancel := context.WithTimeout(ctx, n.opTimeout)
				sent := time.Now()
				rev, uerr := n.leases.Update(uctx, key, n.value, e.Revision())
				cancel()
				if uerr == nil {
					return rev, sent, nil
				}
				break
			}
			if seen == 0 {
				seen = e.Revision()
				n.log.Info("member lease held by another process; waiting for it to expire", "lease", key, "holder", string(e.Value()))
			} else if e.Revision() != seen {
				holder, _, _ := strings.Cut(string(e.Value()), " ")
				return 0, time.Time{}, fmt.Errorf("cluster: cluster.instance %q is in use by another live process (%s renews the lease %s); give every process its own cluster.instance: %w",
					n.o.Instance, holder, key, ErrInstanceTaken)
			}
		case n.nc.IsClosed():
			return 0, time.Time{}, fmt.Errorf("cluster: register member: %w", errConnClosed)
		default:
			n.noteErr(err)
			n.log.Debug("member registration failed", "error", err)
		}
		n.waitTurn(ctx, key)
	}
}

// keepMember holds the member lease until ctx ends, winning it back when it
// was lost. It returns nil when ctx ends.
func (n *Node) keepMember(ctx context.Context, key string, rev uint64, sent time.Time) error {
	for {
		n.keep(ctx, key, rev, sent, func(ctx context.Context) { <-ctx.Done() })
		if ctx.Err() != nil {
			return nil
		}
		var err error
		if rev, sent, err = n.acquireMember(ctx, key); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

type partRun struct {
	cancel context.CancelFunc
	giving bool
}

// managePartitions takes and gives back partitions until ctx ends or
// memberErr reports, then ends every partition's run and waits for them. It
// reports whether it received from memberErr.
func (n *Node) managePartitions(ctx context.Context, run func(ctx context.Context, p int, l Lease), memberErr <-chan error) (memberDone bool, result error) {
	owned := map[int]*partRun{}
	ended := make(chan int)
	start := func(p int, rev uint64, sent time.Time) {
		pctx, cancel := context.WithCancel(ctx)
		owned[p] = &partRun{cancel: cancel}
		key := partitionKey(p)
		go func() {
			defer func() { ended <- p }()
			defer cancel()
			n.keep(pctx, key, rev, sent, func(ctx context.Context) {
				run(ctx, p, Lease{Name: key, Token: rev})
			})
		}()
	}
	tick := time.NewTicker(n.poll)
	defer tick.Stop()
loop:
	for {
		wake := n.view.wait()
		if err := n.rebalance(ctx, owned, start); err != nil {
			result = err
			break
		}
		select {
		case <-ctx.Done():
			break loop
		case result = <-memberErr:
			memberDone = true
			break loop
		case p := <-ended:
			delete(owned, p)
		case <-wake:
		case <-tick.C:
		}
	}
	for _, r := range owned {
		r.cancel()
	}
	for len(owned) > 0 {
		delete(owned, <-ended)
	}
	return memberDone, result
}

// rebalance gives back the partitions over this node's share or takes free
// ones up to it.
func (n *Node) rebalance(ctx context.Context, owned map[int]*partRun, start func(int, uint64, time.Time)) error {
	parts := n.o.Partitions
	members := n.view.members()
	count := len(members)
	if !slices.Contains(members, n.o.Instance) {
		count++
	}
	share := (parts + count - 1) / count
	offset := PartitionOf(parts, n.o.Instance)
	dist := func(p int) int { return (p - offset + parts) % parts }

	var active []int
	for p, r := range owned {
		if !r.giving {
			active = append(active, p)
		}
	}
	if len(active) > share {
		// Keep the partitions nearest the offset, give back the rest.
		slices.SortFunc(active, func(a, b int) int { return cmp.Compare(dist(a), dist(b)) })
		for _, p := range active[share:] {
			owned[p].giving = true
			owned[p].cancel()
			n.log.Info("giving back partition", "partition", p, "share", share, "members", count)
		}
		return nil
	}
	for i := 0; i < parts && len(active) < share; i++ {
		p := (offset + i) % parts
		if owned[p] != nil || n.view.held(partitionKey(p)) {
			continue
		}
		rev, sent, err := n.tryAcquire(ctx, partitionKey(p))
		switch {
		case err == nil:
			start(p, rev, sent)
			active = append(active, p)
		case errors.Is(err, errTaken):
		case ctx.Err() != nil:
			return nil
		case n.nc.IsClosed():
			return fmt.Errorf("cluster: run partitions: %w", errConnClosed)
		default:
			n.noteErr(err)
			n.log.Debug("partition acquisition failed", "partition", p, "error", err)
			return nil
		}
	}
	return nil
}
