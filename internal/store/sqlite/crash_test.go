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

	"github.com/pincerbot/pincer/internal/store"
)

const crashChildEnv = "PINCER_SQLITE_CRASH_CHILD"

// TestCrashChild is the child half of TestKill9LeavesReadableDatabase: it
// appends turns until it is killed, printing each committed sequence number.
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
		if _, err := db.LogInbound(ctx, inboundFor(i)); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println(turn.Seq)
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
	var last int64
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			continue
		}
		last = n
		if last == 200 {
			// Kill mid-stream: the child is inside its next transaction.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
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
	if int64(len(tr)) < last {
		t.Fatalf("%d turns survived, but %d were reported committed", len(tr), last)
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
