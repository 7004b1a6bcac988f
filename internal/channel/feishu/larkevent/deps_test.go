package larkevent

import (
	"os/exec"
	"strings"
	"testing"
)

// The package takes plaintext events from the SDK's long-connection
// client; it must not depend on the SDK, or on anything but the standard
// library.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	const pkg = "github.com/pincerbot/pincer/internal/channel/feishu/larkevent"
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != pkg {
			t.Errorf("depends on %s", dep)
		}
	}
}
