package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
)

func TestStage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "media", "inbound")
	data := pngBytes(t, 7)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])

	s, err := Stage(dir, channel.Blob{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if s.SHA256 != want || s.Name != want[:16]+".png" || s.MIME != "image/png" || s.Size != len(data) {
		t.Errorf("staged %+v", s)
	}
	if !filepath.IsAbs(s.Path) || s.Path != filepath.Join(dir, s.Name) {
		t.Errorf("Path %q", s.Path)
	}
	got, err := os.ReadFile(s.Path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file: %v", err)
	}
	fi, _ := os.Stat(s.Path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
	di, _ := os.Stat(dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", di.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1 (no temporary left)", len(entries))
	}

	// The same content again is not written again.
	old := time.Unix(1000000, 0)
	if err := os.Chtimes(s.Path, old, old); err != nil {
		t.Fatal(err)
	}
	s2, err := Stage(dir, channel.Blob{Data: data, MIME: "image/png"})
	if err != nil || s2 != s {
		t.Fatalf("again: %+v, %v", s2, err)
	}
	if fi, _ := os.Stat(s.Path); !fi.ModTime().Equal(old) {
		t.Error("the file was written again")
	}

	// A damaged copy (wrong size) is replaced.
	if err := os.WriteFile(s.Path, data[:3], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Stage(dir, channel.Blob{Data: data}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(s.Path); !bytes.Equal(got, data) {
		t.Error("a truncated copy was kept")
	}
}

func TestStageTypes(t *testing.T) {
	dir := t.TempDir()
	s, err := Stage(dir, channel.Blob{Data: []byte("#!AMR\nabc")})
	if err != nil || s.MIME != "audio/amr" || filepath.Ext(s.Name) != ".amr" {
		t.Errorf("sniffed: %+v, %v", s, err)
	}
	s, err = Stage(dir, channel.Blob{Data: []byte("%PDF-1.4 abc"), MIME: "application/pdf; x=y"})
	if err != nil || s.MIME != "application/pdf" || filepath.Ext(s.Name) != ".pdf" {
		t.Errorf("given: %+v, %v", s, err)
	}
	if _, err := Stage("", channel.Blob{Data: []byte("x")}); err == nil {
		t.Error("staged without a directory")
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Stage(filepath.Join(file, "sub"), channel.Blob{Data: []byte("x")}); err == nil {
		t.Error("staged under a file")
	}
}
