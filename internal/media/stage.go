package media

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pincerbot/pincer/internal/channel"
)

// Staged is a file written into a workspace.
type Staged struct {
	// Path is the absolute path of the file; Name its base name, which
	// the notes show.
	Path string
	Name string
	// MIME is the content's type: the blob's, else sniffed.
	MIME string
	// SHA256 is the hex SHA-256 of the content; Size its length in bytes.
	SHA256 string
	Size   int
}

// Stage writes b into dir under a name made of its content: the first 16
// hex digits of its SHA-256 and the extension of its MIME type (sniffed
// when b has none), so the same content is stored once. The write is
// atomic (a temporary file renamed into place) and skipped when the file
// is already there with the same size. Files are 0600 and dir, created as
// needed, 0700. The write is not synced to disk: a crash may lose a staged
// file, and the next Stage of it writes it again.
func Stage(dir string, b channel.Blob) (Staged, error) {
	if dir == "" {
		return Staged{}, errors.New("stage: no directory")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Staged{}, fmt.Errorf("stage: %w", err)
	}
	sum := sha256.Sum256(b.Data)
	s := Staged{MIME: mediaType(b.MIME), SHA256: hex.EncodeToString(sum[:]), Size: len(b.Data)}
	if s.MIME == "" || s.MIME == "application/octet-stream" {
		s.MIME = mediaType(Sniff(b.Data))
	}
	s.Name = s.SHA256[:16] + Ext(s.MIME)
	s.Path = filepath.Join(dir, s.Name)
	if fi, err := os.Lstat(s.Path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(s.Size) {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Staged{}, fmt.Errorf("stage: %w", err)
	}
	if err := writeAtomic(s.Path, b.Data); err != nil {
		return Staged{}, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	return s, nil
}

// writeAtomic writes data to a 0600 temporary file beside path and renames
// it to path.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
