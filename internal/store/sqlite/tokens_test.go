package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// TestMigrationToTokenUse: a database of version 13, the last before the
// token counts, opens with the counts ready to add to and read.
func TestMigrationToTokenUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	if err := migratedTo(t, path, 13).Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.AddTokens(ctx, "2026-12-05", 42, "user:onebot:1", "chat:onebot:default:group:2"); err != nil {
		t.Fatal(err)
	}
	got, err := d.TokensUsed(ctx, "2026-12-05", "user:onebot:1", "chat:onebot:default:group:2")
	if err != nil || got["user:onebot:1"] != 42 || got["chat:onebot:default:group:2"] != 42 {
		t.Errorf("counts after migrating: %v %v", got, err)
	}
}
