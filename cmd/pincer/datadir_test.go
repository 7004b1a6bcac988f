package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/dirlock"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// TestSecondServeOnOneDataDirectoryIsRefused: a second pincer serve on
// the data directory of a running one exits with status 1 and a message
// naming the directory and the first one's pid, and the first goes on
// answering; pincer doctor says a gateway holds the directory. Once the
// first is killed with SIGKILL, doctor says it is free, and a new serve
// starts on it.
func TestSecondServeOnOneDataDirectoryIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := freePortConfig("")
	first, _ := startServe(t, dir, cfg)
	defer first.cmd.Process.Kill()
	pid := first.cmd.Process.Pid
	ask := func(p *proc, text string) {
		t.Helper()
		res, _, err := webchattest.New(p.url).Post(text, "")
		if err != nil {
			t.Fatal(err)
		}
		events, err := webchattest.Events(res)
		if err != nil {
			t.Fatal(err)
		}
		if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, text) {
			t.Errorf("the answer to %q: %q", text, got)
		}
	}
	ask(first, "第一个")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, binary(t), "serve", "--config", filepath.Join(dir, "test.json5"))
	second.Dir = dir
	second.Env = append(second.Environ(), "PINCER_CONFIG=")
	out, err := second.CombinedOutput()
	noRace(t, "the second pincer serve", string(out))
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the second pincer serve: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		"pincer did not start", "data directory " + data + " is in use by another pincer (pid " + fmt.Sprint(pid),
		filepath.Join(data, dirlock.FileName), "give this one a store.path in another directory",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the second pincer's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "pincer is ready") || strings.Contains(string(out), "UNIQUE constraint") {
		t.Errorf("the second pincer got going:\n%s", out)
	}
	ask(first, "第二个")

	doctor := func() (code int, dataDir struct{ Status, Detail, Hint string }) {
		t.Helper()
		cmd := exec.CommandContext(ctx, binary(t), "doctor", "--json", "--config", filepath.Join(dir, "test.json5"))
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		noRace(t, "pincer doctor", stderr.String())
		if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		var rep struct {
			Results []struct{ Name, Status, Detail, Hint string }
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("pincer doctor --json: %v\n%s%s", err, out, stderr.String())
		}
		for _, r := range rep.Results {
			if r.Name == "data directory" {
				dataDir = struct{ Status, Detail, Hint string }{r.Status, r.Detail, r.Hint}
			}
		}
		return cmd.ProcessState.ExitCode(), dataDir
	}
	code, r := doctor()
	if code != 0 || r.Status != "warn" || !strings.Contains(r.Detail, data+" is in use by a running pincer serve (pid "+fmt.Sprint(pid)) || r.Hint == "" {
		t.Errorf("pincer doctor beside the running serve: exit %d, %+v", code, r)
	}
	ask(first, "第三个") // the doctor's probe left it alone

	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	code, r = doctor()
	if code != 0 || r.Status != "ok" || !strings.Contains(r.Detail, "no pincer serve runs on "+data+"; the last one (pid "+fmt.Sprint(pid)) {
		t.Errorf("pincer doctor after the kill: exit %d, %+v", code, r)
	}

	third, _ := startServe(t, dir, cfg)
	ask(third, "第四个")
	if err := third.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, third.stderr)
	}
	if code, r = doctor(); code != 0 || r.Status != "ok" || r.Detail != "no pincer serve runs on "+data {
		t.Errorf("pincer doctor after a clean stop: exit %d, %+v", code, r)
	}
}

// TestServeAndDoctorRefuseAReadOnlyDatabase: a database file without
// write permission is refused by pincer serve at start, root or not, and
// pincer doctor fails it with the same reason.
func TestServeAndDoctorRefuseAReadOnlyDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "pincer.db")
	db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "test.json5")
	if err := os.WriteFile(config, []byte(freePortConfig("")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, binary(t), "serve", "--config", config)
	serve.Dir = dir
	out, err := serve.CombinedOutput()
	noRace(t, "pincer serve", string(out))
	reason := "is read-only: the file has no write permission (mode 0400)"
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "pincer did not start") || !strings.Contains(string(out), reason) {
		t.Errorf("pincer serve on a read-only database: %v\n%s", err, out)
	}

	doctor := exec.CommandContext(ctx, binary(t), "doctor", "--config", config)
	doctor.Dir = dir
	out, err = doctor.CombinedOutput()
	noRace(t, "pincer doctor", string(out))
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "fail  store           ./data/pincer.db "+reason) || !strings.Contains(string(out), "→ "+sqlite.ReadOnlyHint) {
		t.Errorf("pincer doctor on a read-only database: %v\n%s", err, out)
	}
}
