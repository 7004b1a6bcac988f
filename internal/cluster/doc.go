// Package cluster lets several pincer processes share the work of one
// deployment through a NATS server with JetStream: leases that give each
// piece of work one holder, chat partitions that give each chat one owner,
// a stream that carries inbound messages to that owner in order, and
// request/reply to whichever process holds a lease.
//
// # Leases and fencing tokens
//
// A lease is a key in the key-value bucket <prefix>_leases, whose entries
// expire one lease TTL after they were last written. To win a lease a
// process creates the key (which fails while it exists); to keep it, it
// rewrites the key every TTL/3, each time stating the revision it wrote last
// (a compare-and-set, so the write fails if anybody else wrote in between).
// The holder measures the TTL from the moment it sent its last successful
// write, which is before the server stored it, and gives up a margin before
// the TTL is over: when its renewals fail (the network is cut, the server is
// down) it stops on its own clock before the entry can expire on the server
// and so before anyone else can win. A holder whose renewal is refused
// because another revision is there stops at once. When a holder is done it
// deletes the key, again stating its revision, and a waiting process (which
// watches the bucket and retries at least every min(1s, TTL/4)) takes over
// at once; when a holder dies, the entry expires and another process takes
// over within about a TTL.
//
// The revision at which a lease was won is its fencing token. Revisions are
// the bucket's sequence numbers and only grow, so a later holder always has
// a larger token than an earlier one; anything a holder writes elsewhere
// can carry the token so that writes from a holder that has been replaced
// are recognised.
//
// # Partitions
//
// Chats are spread over a fixed number of partitions by PartitionOf, a hash
// of a key that names the chat. Each running instance registers itself with
// a lease "member.<instance>" (which also stops two live processes from
// using the same instance name), counts the members, and holds leases
// "part.<p>" for about its share, ceil(partitions/members), of the
// partitions. It starts looking for free partitions at an offset derived
// from its name, so instances do not all race for the same ones. When an
// instance joins, the others give back what is over their share; when one
// dies, its partition leases expire and the others take them.
//
// # The inbound stream and progress
//
// Inbound messages are published to the stream <prefix>_inbound under the
// subject <prefix>.inbound.<p>. A message id given to Publish makes the
// stream store a message published twice within two minutes only once. The
// holder of a partition reads its subject in order with Consume. The
// handler reports each message done once it is safely taken in (possibly
// later and out of order); the highest sequence up to which every message
// is done is saved as the partition's progress in the bucket
// <prefix>_progress, with a compare-and-set on its revision, so a consumer
// that has been replaced and still writes finds out (ErrFenced). The next
// owner starts after the saved progress: a message whose done never came is
// read again, so handlers must be idempotent; none is lost. The stream keeps
// messages for 24 hours.
//
// # Requests to a holder
//
// Serve answers requests for a name over core NATS request/reply (subject
// <prefix>.rpc.<name>); the holder of a lease serves its name, and any
// node can Request it. Nobody serving gives ErrNoHolder at once.
//
// # Timing, with the default TTL of 6 s
//
// Renewals go out every 2 s; a holder that cannot renew stops 4.8 s after
// its last successful renewal was sent (TTL minus a fifth). A lease that is
// released is taken by a waiting node within a few milliseconds; a holder
// that dies is replaced about 6 to 7 s after its last renewal (the entry
// expires a TTL after it was written, then the next contender's retry, at
// most a second later, wins). A NATS server restart shorter than the
// holder's patience keeps every lease (the entries and their revisions are
// on disk); a longer one ends them all, and they are won again once the
// server is back. While disconnected, requests fail at once with "not
// connected to NATS" instead of being buffered.
package cluster
