package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Lease is a lease as won by this node.
type Lease struct {
	Name string
	// Token is the lease entry's revision when it was won: the fencing
	// token. Revisions only grow, so a later holder always has a larger
	// token than every earlier one.
	Token uint64
}

// Causes of a run's context ending, for logs.
var (
	errLeaseExpired = errors.New("cluster: lease not renewed in time")
	errLeaseFenced  = errors.New("cluster: lease taken over by another holder")
	errConnClosed   = errors.New("cluster: connection closed")
)

// Hold contends for the lease name until ctx ends. Each time it is won, run
// is called with a context that is cancelled the moment the lease is lost
// (renewal refused because another holder's revision is there, or no
// successful renewal for TTL minus a margin — stop sending at once), or when
// ctx ends; after run returns the lease is released (deleted with its last
// revision) and Hold contends again (unless ctx ended). Renewal every TTL/3
// with KV Update(LastRevision). A contender retries Create at least every
// min(1s, TTL/4), and also watches the key so a released lease is taken at
// once. Hold returns nil when ctx ends, ErrClosed after Close, and an error
// when the connection was closed for good.
//
// Names are dot-separated tokens of letters, digits and "-_=/" (Token makes
// one from any string); the prefixes "member." and "part." belong to
// RunPartitions.
func (n *Node) Hold(ctx context.Context, name string, run func(ctx context.Context, l Lease)) error {
	if !leaseKeyRE.MatchString(name) || strings.HasPrefix(name, memberPrefix) || strings.HasPrefix(name, partitionPrefix) {
		return fmt.Errorf("cluster: invalid lease name %q", name)
	}
	outer := ctx
	ctx, cancel := n.scope(ctx)
	defer cancel()
	for {
		if err := ctx.Err(); err != nil {
			return n.endErr(outer)
		}
		rev, sent, err := n.tryAcquire(ctx, name)
		if err == nil {
			held := n.keep(ctx, name, rev, sent, func(ctx context.Context) {
				run(ctx, Lease{Name: name, Token: rev})
			})
			if held && ctx.Err() == nil {
				// run returned by itself: give the others a turn first.
				sleep(ctx, n.poll)
			}
			continue
		}
		if !errors.Is(err, errTaken) {
			if n.nc.IsClosed() {
				if ctx.Err() != nil {
					return n.endErr(outer)
				}
				return fmt.Errorf("cluster: hold %s: %w", name, errConnClosed)
			}
			n.noteErr(err)
			n.log.Debug("lease contention failed", "lease", name, "error", err)
		}
		n.waitTurn(ctx, name)
	}
}

// endErr is what a loop returns once its context has ended: nil when the
// caller's context ended, ErrClosed when Close ended it.
func (n *Node) endErr(outer context.Context) error {
	if outer.Err() == nil && n.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

var errTaken = errors.New("cluster: lease held by another")

// tryAcquire tries once to create the lease key. It returns errTaken when
// the key exists.
func (n *Node) tryAcquire(ctx context.Context, key string) (rev uint64, sent time.Time, err error) {
	cctx, cancel := context.WithTimeout(ctx, n.opTimeout)
	defer cancel()
	sent = time.Now()
	rev, err = n.leases.Create(cctx, key, n.value)
	if err == nil {
		return rev, sent, nil
	}
	if isConflict(err) {
		n.view.markHeld(key)
		return 0, sent, errTaken
	}
	return 0, sent, fmt.Errorf("cluster: acquire %s: %w", key, connErr(err))
}

// waitTurn waits until the view shows key free, or for the poll period, or
// until ctx ends.
func (n *Node) waitTurn(ctx context.Context, key string) {
	t := time.NewTimer(n.poll)
	defer t.Stop()
	for {
		ch := n.view.wait()
		if !n.view.held(key) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-ch:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// keep runs run while this node holds the lease key, won at revision rev by
// a write sent at sent: it renews the lease, cancels run's context when the
// lease is lost or ctx ends, waits for run and then releases the lease
// unless another holder has it. It reports whether the lease was still held
// when run returned.
func (n *Node) keep(ctx context.Context, key string, rev uint64, sent time.Time, run func(ctx context.Context)) (held bool) {
	n.mu.Lock()
	if n.closing {
		// Won as Close began: give it straight back.
		n.mu.Unlock()
		n.release(key, rev, rev)
		return false
	}
	n.keepers.Add(1)
	n.mu.Unlock()
	defer n.keepers.Done()
	token := rev
	ttl := n.o.LeaseTTL
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	// The server drops the entry TTL after it stored the last write, which
	// is after that write was sent; giving up a margin before TTL after the
	// send means this node stops before anyone else can win the lease.
	expiry := time.AfterFunc(time.Until(sent.Add(ttl-n.margin)), func() { cancelRun(errLeaseExpired) })
	defer expiry.Stop()

	n.setHeld(key, rev)
	n.log.Info("lease acquired", "lease", key, "token", token)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		run(runCtx)
	}()

	renew := time.NewTimer(n.renewEvery)
	defer renew.Stop()
	var lost error
	failing := false // renewals are failing: only the first failure is a warning
loop:
	for {
		select {
		case <-runDone:
			break loop
		case <-runCtx.Done():
			if c := context.Cause(runCtx); c == errLeaseExpired {
				lost = c
			}
			break loop
		case <-n.closed:
			lost = errConnClosed
			break loop
		case <-renew.C:
		}
		rctx, cancel := context.WithTimeout(runCtx, n.opTimeout)
		s := time.Now()
		next, err := n.leases.Update(rctx, key, n.value, rev)
		cancel()
		switch {
		case err == nil:
			rev = next
			if !expiry.Stop() {
				lost = errLeaseExpired // expired while the renewal was under way
				break loop
			}
			expiry.Reset(time.Until(s.Add(ttl - n.margin)))
			n.setHeld(key, rev)
			renew.Reset(n.renewEvery)
			if failing {
				failing = false
				n.log.Info("lease renewed again", "lease", key, "token", token)
			}
		case isConflict(err):
			lost = errLeaseFenced
			break loop
		case n.nc.IsClosed():
			lost = errConnClosed
			break loop
		default:
			if runCtx.Err() == nil {
				err = connErr(err)
				n.noteErr(fmt.Errorf("renew %s: %w", key, err))
				level := slog.LevelDebug
				if !failing {
					level, failing = slog.LevelWarn, true
				}
				n.log.Log(runCtx, level, "lease renewal failed; retrying until the lease runs out",
					"lease", key, "token", token, "error", err)
			}
			renew.Reset(n.retryEvery)
		}
	}
	if lost != nil {
		cancelRun(lost)
	} else {
		cancelRun(context.Canceled)
	}
	<-runDone
	n.dropHeld(key)
	if lost != nil {
		n.noteErr(fmt.Errorf("lease %s lost: %w", key, lost))
		n.log.Info("lease lost", "lease", key, "token", token, "reason", lost.Error())
	}
	if lost == errLeaseFenced || lost == errConnClosed {
		return false
	}
	n.release(key, rev, token)
	return lost == nil
}

// release deletes the lease entry if it is still at revision rev. It gives
// up after a second: the entry then expires by itself.
func (n *Node) release(key string, rev, token uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), min(n.opTimeout, time.Second))
	defer cancel()
	err := n.leases.Delete(ctx, key, jetstream.LastRevision(rev))
	switch {
	case err == nil:
		n.log.Info("lease released", "lease", key, "token", token)
	case isConflict(err):
		n.log.Debug("lease already gone", "lease", key, "token", token)
	case errors.Is(err, nats.ErrConnectionClosed):
	default:
		n.log.Warn("lease release failed; it expires by ttl", "lease", key, "token", token, "error", err)
	}
}

func (n *Node) setHeld(key string, rev uint64) {
	n.mu.Lock()
	n.held[key] = rev
	n.mu.Unlock()
}

func (n *Node) dropHeld(key string) {
	n.mu.Lock()
	delete(n.held, key)
	n.mu.Unlock()
}
