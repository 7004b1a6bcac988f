package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const crashChildEnv = "PINCER_SQLITE_CRASH_CHILD"

// TestCrashChild is the child half of TestKill9LeavesReadableDatabase: it
// appends turns until it is killed, printing each sequence number as its
// write returns, and every tenth turn writes an outbox entry, which returns
// only once committed ("durable <seq>").
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("runs only as the child of TestKill9LeavesReadableDatabase")
	}
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if _, _, err := db.OpenSession(ctx, "k", "main"); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		turn, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleAssistant, Text: strings.Repeat("x", 2000) + strconv.Itoa(i)})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if _, err := db.LogInbound(ctx, inboundFor(i), store.ViewHistory); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if _, _, err := db.LogInboundBuffered(ctx, bufferedFor(i), store.ViewHistory, store.Buffered{Scope: "crash", Kind: "realtime", Key: "k", Message: bufferedFor(i)}); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println(turn.Seq)
		if turn.Seq%10 == 0 {
			if _, err := db.AddOutbox(ctx, store.OutboxEntry{ID: "r" + strconv.FormatInt(turn.Seq, 10), Channel: "onebot", Out: msg.Outbound{Account: "default", Text: "x"}}); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Println("durable", turn.Seq)
		}
		time.Sleep(time.Millisecond) // a steady stream, not one batch
	}
}

func TestKill9LeavesReadableDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), "pincer.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var last, durable int64
	returned := map[int64]time.Time{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
		if d, ok := strings.CutPrefix(line, "durable "); ok {
			durable, _ = strconv.ParseInt(d, 10, 64)
			continue
		}
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			continue
		}
		last = n
		returned[n] = time.Now()
		if last == 200 {
			// Kill mid-stream: the child is inside its next transaction.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	killed := time.Now()
	_ = cmd.Wait()
	if last != 200 {
		t.Fatalf("child stopped early at %d", last)
	}
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		t.Fatal(err)
	}
	tr, err := db.Transcript(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// Writes are committed in batches: everything up to the last durable
	// write survived, and of the rest only what returned in the last
	// moments before the kill (the open batch) may be missing.
	survived := int64(len(tr))
	if survived < durable {
		t.Fatalf("%d turns survived, but turn %d was committed with a durable write", survived, durable)
	}
	for seq := survived + 1; seq <= last; seq++ {
		if age := killed.Sub(returned[seq]); age > 200*time.Millisecond {
			t.Errorf("turn %d returned %v before the kill and was lost; only the last batch (%v) may be", seq, age, maxBatchAge)
		}
	}
	t.Logf("%d of %d turns survived (durable up to %d)", survived, last, durable)
	// The log entries handed in before a durable write were committed
	// with it, and the numbering goes on after the last one that survived.
	logged, err := db.RecentInbound(ctx, "webchat", msg.DefaultAccount, inboundFor(0).Peer, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(logged)) < durable {
		t.Errorf("%d log entries survived, but entry %d was handed in before a durable write", len(logged), durable)
	}
	seq, err := db.LogInbound(ctx, inboundFor(100000), 0)
	if n := len(logged); err != nil || (n > 0 && seq <= logged[n-1].Seq) {
		t.Errorf("log entry after the crash numbered %d (%v); %d entries survived", seq, err, n)
	}
	// A message logged with its window entry kept both or neither.
	withEntry, err := db.RecentInbound(ctx, "webchat", msg.DefaultAccount, bufferedFor(0).Peer, 1000)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := db.BufferedEntries(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	held := map[msg.MessageID]bool{}
	for _, e := range entries {
		held[e.Message.ID] = true
	}
	if len(entries) != len(withEntry) {
		t.Errorf("%d messages logged with a window entry, %d entries kept", len(withEntry), len(entries))
	}
	for _, lm := range withEntry {
		if !held[lm.Message.ID] {
			t.Errorf("message %s was logged, its window entry lost", lm.Message.ID)
		}
	}
	for i, turn := range tr {
		if turn.Seq != int64(i+1) {
			t.Fatalf("turn %d has seq %d after recovery", i, turn.Seq)
		}
	}
	// The database still takes writes.
	if _, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: "after crash"}); err != nil {
		t.Fatal(err)
	}
}

// bufferedFor is message i of the chat whose messages are logged with a
// window entry.
func bufferedFor(i int) msg.Message {
	m := inboundFor(i)
	m.Peer.ID = "buffered"
	return m
}
