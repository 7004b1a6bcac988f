package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/pincerbot/pincer"

// inner lists the packages that must import only the standard library and
// other pincer packages; entries not written yet are skipped.
var inner = []string{"msg", "prompt", "pipeline", "trigger", "aggregate", "quote"}

func TestInnerPackagesImportNoSDK(t *testing.T) {
	for _, name := range inner {
		if _, err := os.Stat(filepath.Join("..", name)); err != nil {
			continue
		}
		pkg := module + "/internal/" + name
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dep, module+"/") {
				t.Errorf("%s depends on %s; inner packages may import only the standard library and pincer", pkg, dep)
			}
		}
	}
}
