package llmtest

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	openai "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

// TestModelListsReadByTheSDKs: each fake lists its models in its API's
// format, as the official SDK reads it.
func TestModelListsReadByTheSDKs(t *testing.T) {
	o := NewOpenAI(t)
	oc := openai.NewClient(ooption.WithBaseURL(o.URL+"/v1"), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
	page, err := oc.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" {
			t.Errorf("OpenAI model %s is a %q", m.ID, m.Object)
		}
	}
	if !slices.Equal(ids, DefaultModels) {
		t.Errorf("OpenAI models %q, want %q", ids, DefaultModels)
	}

	a := NewAnthropic(t)
	a.SetModels("claude-a", "claude-b", "claude-c")
	ac := anthropic.NewClient(aoption.WithBaseURL(a.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	apage, err := ac.Models.List(t.Context(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, m := range apage.Data {
		ids = append(ids, m.ID)
		if m.Type != "model" {
			t.Errorf("Anthropic model %s is a %q", m.ID, m.Type)
		}
	}
	if want := []string{"claude-a", "claude-b", "claude-c"}; !slices.Equal(ids, want) || apage.HasMore {
		t.Errorf("Anthropic models %q (more: %v), want %q", ids, apage.HasMore, want)
	}
}

// TestTranscriptsAreServedInOrder: scripted transcripts and errors come
// in turn, the last repeating, and every request is recorded with its
// form.
func TestTranscriptsAreServedInOrder(t *testing.T) {
	s := NewOpenAI(t)
	s.ScriptTranscripts(Reply{Text: []string{"一", "二"}}, Reply{Status: http.StatusServiceUnavailable}, Reply{Text: []string{"三"}})
	c := openai.NewClient(ooption.WithBaseURL(s.URL+"/v1"), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
	var got []string
	for i := range 4 {
		res, err := c.Audio.Transcriptions.New(t.Context(), openai.AudioTranscriptionNewParams{
			File:  openai.File(bytes.NewReader(bytes.Repeat([]byte{'a'}, i+1)), fmt.Sprintf("v%d.ogg", i), "audio/ogg"),
			Model: "whisper-1", Language: openai.String("zh"),
		})
		switch {
		case err != nil:
			got = append(got, "error")
		default:
			got = append(got, res.Text)
		}
	}
	if want := []string{"一二", "error", "三", "三"}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	reqs := s.Transcriptions()
	if len(reqs) != 4 {
		t.Fatalf("%d recorded", len(reqs))
	}
	for i, r := range reqs {
		if r.FileName != fmt.Sprintf("v%d.ogg", i) || len(r.Audio) != i+1 || r.Model != "whisper-1" || r.Fields["language"] != "zh" {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}
