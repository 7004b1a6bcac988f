package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorCommand(t *testing.T) {
	qq, base := initFakes(t, "qq-secret", "sk-secret")
	dir := t.TempDir()
	write := func(token string) string {
		path := filepath.Join(dir, "pincer.json5")
		doc := fmt.Sprintf(`{
  store: { path: %q },
  models: { providers: { sim: { baseUrl: %q, apiKey: 'sk-secret' } } },
  agents: { defaults: { model: { primary: 'sim/sim-model' } } },
  channels: { onebot: { wsUrl: %q, accessToken: %q } },
}`, filepath.Join(dir, "pincer.db"), base, qq.URL, token)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("qq-secret")
	code, stdout, stderr := runCmd(t, "doctor", "--config", path)
	if code != 0 || !strings.Contains(stdout, "all 5 checks ok") || !strings.Contains(stdout, "ok    qq default ws") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, stdout, _ = runCmd(t, "doctor", "-json", path)
	var rep struct {
		Config  string
		OK      bool
		Results []struct{ Name, Status, Detail, Hint string }
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if code != 0 || !rep.OK || rep.Config != path || len(rep.Results) != 5 || rep.Results[3].Name != "qq default ws" || rep.Results[3].Status != "ok" || rep.Results[2].Name != "data directory" || rep.Results[2].Status != "ok" {
		t.Errorf("exit %d, %+v", code, rep)
	}

	write("wrong")
	code, stdout, _ = runCmd(t, "doctor", path)
	if code != 1 || !strings.Contains(stdout, "fail  qq default ws") || !strings.Contains(stdout, "→ channels.onebot.accessToken must equal") || !strings.Contains(stdout, "1 failed") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
}
