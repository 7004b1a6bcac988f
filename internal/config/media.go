package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
)

// ModelSpec describes one model of a provider, for what pincer cannot
// guess from its name.
type ModelSpec struct {
	// ID is the model name as the provider knows it ("gpt-4o-mini").
	ID string `json:"id"`
	// Input lists what the model reads: "text", and "image" when it sees
	// pictures. Unset, well-known vision models (GPT-4o, Claude, Gemini,
	// Qwen-VL …) see images and others read text only.
	Input []string `json:"input"`
}

// Model inputs.
const (
	InputText  = "text"
	InputImage = "image"
)

// validate checks one model spec.
func (m ModelSpec) validate() error {
	var errs []error
	if strings.TrimSpace(m.ID) == "" {
		errs = append(errs, problem("id", "must not be empty"))
	}
	for i, in := range m.Input {
		errs = append(errs, oneOf(fmt.Sprintf("input[%d]", i), in, InputText, InputImage))
	}
	return errors.Join(errs...)
}

// SeesImages reports whether model ref takes image input: as its provider's
// models list says, else by its name (llm.SeesImagesByName).
func (m Models) SeesImages(ref llm.Ref) bool {
	for _, spec := range m.Providers[ref.Provider].Models {
		if spec.ID == ref.Model && spec.Input != nil {
			return slices.Contains(spec.Input, InputImage)
		}
	}
	return llm.SeesImagesByName(ref.Model)
}

// Media configures what pincer does with pictures, voice notes, files and
// links: on the way in, understood within a time budget before the agent
// runs; on the way out, sent as the platform's media.
type Media struct {
	// BudgetMs bounds the time one turn spends on its media and links
	// (downloads, descriptions, transcription, previews); what is not
	// ready by then is left out and the turn goes on.
	BudgetMs int `json:"budgetMs"`
	// MaxBytes caps one downloaded attachment.
	MaxBytes int64 `json:"maxBytes"`
	// MaxImages caps the images one turn shows the model.
	MaxImages int `json:"maxImages"`
	// AllowPrivateNetworks lets downloads and link previews reach
	// loopback, private and link-local addresses (an intranet wiki, a
	// OneBot implementation's file server on the LAN). Off, such addresses
	// are refused, so a message cannot make pincer probe its own network.
	AllowPrivateNetworks bool `json:"allowPrivateNetworks"`
	// DescribePrompt replaces the built-in instruction the image model
	// (agents.defaults.imageModel) gets with each picture it describes.
	DescribePrompt string `json:"describePrompt"`
	// Transcription turns voice notes into text.
	Transcription Transcription `json:"transcription"`
	// Links previews the links of a message (title and description).
	Links Links `json:"links"`
	// SendFrom lists directories, besides the workspace (outside other
	// chats' folders), that the agent may send local files from.
	SendFrom []string `json:"sendFrom"`
	// SendFromTemp lets the agent send files from the system's temporary
	// directory too, as OpenClaw does (its tools and scripts write there).
	SendFromTemp bool `json:"sendFromTemp"`
}

// Transcription configures speech to text.
type Transcription struct {
	// Model, as provider/model, names an OpenAI-compatible provider's
	// /audio/transcriptions model ("openai/whisper-1"); empty: voice notes
	// stay [语音].
	Model string `json:"model"`
	// Language is an ISO-639-1 hint ("zh"); empty lets the model detect it.
	Language string `json:"language"`
}

// Links configures link previews.
type Links struct {
	Enabled bool `json:"enabled"`
	// Max is how many links of one turn are previewed.
	Max int `json:"max"`
}

// DefaultMedia is the media section's defaults.
func DefaultMedia() Media {
	return Media{BudgetMs: 8000, MaxBytes: 20 << 20, MaxImages: 8, Links: Links{Enabled: true, Max: 3}, SendFrom: []string{}, SendFromTemp: true}
}

// Budget returns BudgetMs as a duration.
func (m Media) Budget() time.Duration { return ms(m.BudgetMs) }

// Validate checks the media section; models is where its model refs must
// be configured.
func (m Media) Validate(models *Models) error {
	var errs []error
	if m.BudgetMs < 100 {
		errs = append(errs, problem("budgetMs", "must be at least 100, got %d", m.BudgetMs))
	}
	if m.MaxBytes < 1024 {
		errs = append(errs, problem("maxBytes", "must be at least 1024, got %d", m.MaxBytes))
	}
	if m.MaxImages < 1 {
		errs = append(errs, problem("maxImages", "must be at least 1, got %d", m.MaxImages))
	}
	if m.Links.Max < 0 {
		errs = append(errs, problem("links.max", "must not be negative"))
	}
	if ref := m.Transcription.Model; ref != "" {
		if err := models.checkRef("transcription.model", ref); err != nil {
			errs = append(errs, err)
		} else if p, _, _ := strings.Cut(ref, "/"); p == "preview" || models.Providers[p].ResolvedAPI(p) != APIOpenAI {
			errs = append(errs, problem("transcription.model", "provider %q does not speak the OpenAI API, which transcription needs", p))
		}
	}
	for i, dir := range m.SendFrom {
		if !filepath.IsAbs(dir) {
			errs = append(errs, problem(fmt.Sprintf("sendFrom[%d]", i), "want an absolute directory, got %q", dir))
		}
	}
	return errors.Join(errs...)
}
