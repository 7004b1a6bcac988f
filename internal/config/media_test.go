package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
)

func TestMediaDefaults(t *testing.T) {
	m := Default().Media
	if m.Budget().Milliseconds() != 8000 || m.MaxBytes != 20<<20 || m.MaxImages != 8 || !m.Links.Enabled || m.Links.Max != 3 || m.AllowPrivateNetworks {
		t.Errorf("media defaults: %+v", m)
	}
}

func TestMediaValidate(t *testing.T) {
	cfg, err := Parse([]byte(`{
		models: { providers: { claude: { api: 'anthropic' }, oa: {} } },
		agents: { defaults: { imageModel: { primary: 'nowhere/gpt-4o', fallbacks: ['oa/x', 'bad'] } } },
		media: {
			budgetMs: 50, maxBytes: 10, maxImages: -1,
			transcription: { model: 'claude/whisper-1' },
			links: { max: -2 },
			sendFrom: ['relative/dir'],
		},
	}`), noEnv)
	if err == nil {
		t.Fatalf("want problems, got %+v", cfg.Media)
	}
	var fe *FieldError
	var paths []string
	for _, e := range Problems(err) {
		if errors.As(e, &fe) {
			paths = append(paths, fe.Path)
		}
	}
	got := strings.Join(paths, " ")
	for _, p := range []string{"media.budgetMs", "media.maxBytes", "media.maxImages", "agents.defaults.imageModel.primary", "agents.defaults.imageModel.fallbacks[1]", "media.transcription.model", "media.links.max", "media.sendFrom[0]"} {
		if !strings.Contains(got, p) {
			t.Errorf("no problem for %s in %s", p, got)
		}
	}

	ok, err := Parse([]byte(`{
		models: { providers: { oa: {} } },
		agents: { defaults: { imageModel: { primary: 'oa/gpt-4o-mini' } } },
		media: { transcription: { model: 'oa/whisper-1' }, sendFrom: ['/srv/files'] },
	}`), noEnv)
	if err != nil {
		t.Fatalf("valid media section refused: %v", err)
	}
	if ok.Media.Transcription.Model != "oa/whisper-1" || ok.Media.SendFrom[0] != "/srv/files" {
		t.Errorf("media = %+v", ok.Media)
	}
}

func TestSeesImagesConfigOverridesTheName(t *testing.T) {
	cfg, err := Parse([]byte(`{
		models: { providers: { oa: { models: [
			{ id: 'gpt-4o-mini', input: ['text'] },
			{ id: 'house-model', input: ['text', 'image'] },
		] } } },
	}`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		model string
		want  bool
	}{
		{"gpt-4o-mini", false}, // listed as text only
		{"house-model", true},  // listed with image
		{"gpt-4o", true},       // not listed: by name
		{"deepseek-chat", false},
	} {
		if got := cfg.Models.SeesImages(llm.Ref{Provider: "oa", Model: tt.model}); got != tt.want {
			t.Errorf("SeesImages(oa/%s) = %v, want %v", tt.model, got, tt.want)
		}
	}
	if _, err := Parse([]byte(`{ models: { providers: { oa: { models: [{ id: '', input: ['smell'] }] } } } }`), noEnv); err == nil ||
		!strings.Contains(err.Error(), "models.providers.oa.models[0].id") || !strings.Contains(err.Error(), "models.providers.oa.models[0].input[0]") {
		t.Errorf("bad model spec: %v", err)
	}
}
