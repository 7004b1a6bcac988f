package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/openai"
	"github.com/pincerbot/pincer/internal/media"
	"github.com/pincerbot/pincer/internal/msg"
)

// mediaKit is what the channels and the engine share for media: one
// fetcher that refuses non-public addresses (unless
// media.allowPrivateNetworks), and the configuration.
type mediaKit struct {
	cfg     config.Media
	fetcher *media.Fetcher
	// platform fetches what a platform's own server hands out, trusting
	// that server. Its connections are its own: one opened to a trusted
	// host is never reused for a user's URL, which would skip the check
	// made when a connection opens.
	platform *media.Fetcher
}

func newMediaKit(cfg config.Media) *mediaKit {
	o := media.FetchOptions{AllowPrivate: cfg.AllowPrivateNetworks}
	return &mediaKit{cfg: cfg, fetcher: media.NewFetcher(o), platform: media.NewFetcher(o)}
}

// fetch downloads a URL a user or the agent chose: only public addresses.
func (k *mediaKit) fetch(ctx context.Context, rawURL string, limit int64) (channel.Blob, error) {
	return k.fetcher.Get(ctx, rawURL, limit)
}

// fetchFrom is fetch for the URLs a platform's own server hands out (a
// OneBot implementation serving its messages' files): that server's hosts
// are trusted, whatever their address; nothing else on the network is.
func (k *mediaKit) fetchFrom(hosts ...string) func(ctx context.Context, rawURL string, limit int64) (channel.Blob, error) {
	return func(ctx context.Context, rawURL string, limit int64) (channel.Blob, error) {
		return k.platform.Get(media.Trusting(ctx, resolveHosts(ctx, hosts)...), rawURL, limit)
	}
}

// publicURL vets a URL a reply sends for the platform to fetch: its host
// must resolve to public addresses only (unless
// media.allowPrivateNetworks), so the agent cannot have a OneBot
// implementation fetch a page of pincer's own network into the chat.
func (k *mediaKit) publicURL(ctx context.Context, rawURL string) error {
	if k.cfg.AllowPrivateNetworks {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("%q is not a URL with a host", rawURL)
	}
	addrs := resolveHosts(ctx, []string{u.Hostname()})
	if len(addrs) == 0 {
		return fmt.Errorf("%s does not resolve", u.Hostname())
	}
	for _, a := range addrs {
		if !media.IsPublic(a) {
			return fmt.Errorf("%s: %w", u.Hostname(), media.ErrPrivateAddress)
		}
	}
	return nil
}

// resolveHosts returns the addresses of hosts (names or literals); names
// that do not resolve are left out.
func resolveHosts(ctx context.Context, hosts []string) []netip.Addr {
	var out []netip.Addr
	for _, h := range hosts {
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			out = append(out, a)
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		cancel()
		if err == nil {
			out = append(out, addrs...)
		}
	}
	return out
}

// oneBotHosts are the hosts a QQ account's implementation runs on: those
// of the URLs pincer connects to, and this machine when the
// implementation connects to pincer's loopback listener.
func oneBotHosts(a config.OneBotAccount, gw config.Gateway) []string {
	var hosts []string
	for _, raw := range []string{a.WSURL, a.HTTPURL} {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			hosts = append(hosts, u.Hostname())
		}
	}
	if (a.ReverseWS.Enabled || a.HTTPPost.Enabled) && gw.Loopback() {
		hosts = append(hosts, "127.0.0.1", "::1")
	}
	return hosts
}

// mediaReader is the engine's MediaReader: the message's channel account
// downloads, the understander reads within the budget, and files are
// staged in the chat's workspace under media/inbound.
type mediaReader struct {
	u      *media.Understander
	budget time.Duration
	// root is the agent's workspace, absolute: notes name staged files
	// relative to it.
	root string
	// source finds a channel account's downloader.
	source func(ch msg.ChannelID, account msg.AccountID) (channel.Downloader, bool)
	// fileTool names the tool that downloads a channel's files on demand.
	fileTool map[msg.ChannelID]string
	// describer describes pictures for models that cannot see them; nil
	// without agents.defaults.imageModel. describerFor, when set, gives a
	// chat's own, nil for this one.
	describer    *media.Describer
	describerFor func(msg.Message) *media.Describer
}

// describe is agent.Options.Describe: the image model's description of a
// picture, nil without an image model.
func (r *mediaReader) describe() func(context.Context, llm.Image) (string, error) {
	if r.describer == nil {
		return nil
	}
	return func(ctx context.Context, img llm.Image) (string, error) { return r.describer.Describe(ctx, img, "") }
}

var _ engine.MediaReader = (*mediaReader)(nil)

// newMediaReader builds the reader of the media section: the vision model
// and the transcription model come from the configured providers.
func newMediaReader(k *mediaKit, models config.Models, imageModel config.ModelChoice, providers map[string]llm.Provider, root string, log *slog.Logger) (*mediaReader, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("config: agents.defaults.workspace: %w", err)
	}
	o := media.Options{Fetcher: k.fetcher, MaxBytes: k.cfg.MaxBytes, MaxImages: k.cfg.MaxImages, Links: k.cfg.Links.Enabled, MaxLinks: k.cfg.Links.Max, Logger: log.With("component", "media")}
	if imageModel.Primary != "" {
		if o.Describer, err = newDescriber(k, imageModel, providers, filepath.Join(abs, ".cache", "vision")); err != nil {
			return nil, fmt.Errorf("config: agents.defaults.imageModel: %w", err)
		}
	}
	if t := k.cfg.Transcription.Model; t != "" {
		ref, err := llm.ParseRef(t)
		if err != nil {
			return nil, fmt.Errorf("config: media.transcription.model: %w", err)
		}
		p := models.Providers[ref.Provider]
		o.Transcriber = openai.NewTranscriber(openai.TranscriberOptions{
			Provider: ref.Provider, BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Model: ref.Model, Timeout: p.Timeout(), Headers: p.Headers,
			Language: k.cfg.Transcription.Language,
		})
	}
	return &mediaReader{u: media.NewUnderstander(o), budget: k.cfg.Budget(), root: abs, fileTool: map[msg.ChannelID]string{}, describer: o.Describer}, nil
}

// newDescriber describes pictures with the image model chain choice,
// caching descriptions under cacheDir.
func newDescriber(k *mediaKit, choice config.ModelChoice, providers map[string]llm.Provider, cacheDir string) (*media.Describer, error) {
	var chain []media.VisionModel
	for _, v := range append([]string{choice.Primary}, choice.Fallbacks...) {
		ref, err := llm.ParseRef(v)
		if err != nil {
			return nil, err
		}
		chain = append(chain, media.VisionModel{Provider: providers[ref.Provider], Model: ref.Model})
	}
	return media.NewDescriber(media.DescriberOptions{
		Provider: chain[0].Provider, Model: chain[0].Model, Fallbacks: chain[1:], Prompt: k.cfg.DescribePrompt,
		CacheDir: cacheDir,
	}), nil
}

// Read implements engine.MediaReader.
func (r *mediaReader) Read(ctx context.Context, mc engine.MsgContext, seesImages bool) engine.MediaRead {
	ctx, cancel := context.WithTimeout(ctx, r.budget)
	defer cancel()
	m := mc.Message
	in := media.Input{Attachments: mc.Media, Text: mc.RawBody, Dir: filepath.Join(chatWorkspace(r.root, m), "media", "inbound"), SeesImages: seesImages}
	if r.describerFor != nil {
		in.Describer = r.describerFor(m)
	}
	if r.source != nil {
		if d, ok := r.source(m.Channel, m.Account); ok {
			in.Download = d.Download
		}
	}
	res := r.u.Understand(ctx, in)
	var out engine.MediaRead
	// Notes name a staged file by its path in the workspace, so the agent
	// can send it on or read it with its tools. A file staged twice (the
	// same picture in a message and its quote) is renamed once.
	renamed := map[string]bool{}
	var pairs []string
	for _, s := range res.Staged {
		if rel, err := filepath.Rel(r.root, s.Path); err == nil && s.Name != "" && !renamed[s.Name] {
			renamed[s.Name] = true
			pairs = append(pairs, s.Name, filepath.ToSlash(rel))
		}
	}
	rename := strings.NewReplacer(pairs...)
	for _, n := range res.Notes {
		out.Notes = append(out.Notes, rename.Replace(n))
	}
	// The model is shown each picture once.
	for _, img := range res.Images {
		if !slices.Contains(out.Images, img.Staged.Path) {
			out.Images = append(out.Images, img.Staged.Path)
		}
	}
	files := 0
	if tool := r.fileTool[m.Channel]; tool != "" {
		for _, a := range mc.Media {
			if (a.Segment.Kind == msg.SegFile || a.Segment.Kind == msg.SegVideo) && a.Message != "" {
				files++
				name := a.Segment.Name
				if name == "" {
					name = string(a.Segment.Kind)
				}
				out.Notes = append(out.Notes, fmt.Sprintf("[文件 %s: message_id=%s，可用 %s 下载]", name, a.Message, tool))
			}
		}
	}
	if len(mc.Media) > 0 || len(out.Notes) > 0 {
		out.Summary = fmt.Sprintf("%d attachment(s), %d picture(s) shown to the model, %d note(s) added", len(mc.Media), len(out.Images), len(out.Notes))
		if len(out.Notes) > 0 {
			out.Summary += ": " + clip(strings.Join(out.Notes, " "), 300)
		}
	}
	return out
}

// chatWorkspace is the directory of a chat's files under root:
// root/<channel>/<account>/<chat>, a direct chat as private-<id>; for
// Feishu the same place its download tool saves to.
func chatWorkspace(root string, m msg.Message) string {
	if m.Channel == feishu.ChannelID {
		return feishu.ChatWorkspace(root, m.Account)(m.Peer)
	}
	dir := m.Peer.ID
	if m.Peer.Kind == msg.Direct {
		dir = "private-" + dir
	}
	return filepath.Join(root, safeName(string(m.Channel)), safeName(string(m.Account)), safeName(dir))
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// mediaGuide tells the agent how pictures and files reach it and how it
// sends them; it ends the system prompt.
const mediaGuide = "Pictures, voice notes and files people send are saved in your workspace; their messages name them, as [图片1: <path>] or [文件 <name>: message_id=<id>]. " +
	"To send a picture, voice note or file, write it on a line of its own as MEDIA: <path or https URL> (a path in your workspace, or absolute); " +
	"any text beside it goes as a caption."

// attachments finds the channel account that reads a message and
// downloads its attachments.
func attachments(qqs *qq, larks *lark) attachmentSource {
	return func(ch msg.ChannelID, acct msg.AccountID) (channel.Fetcher, channel.Downloader, bool) {
		switch {
		case ch == onebot.ChannelID && qqs != nil:
			if a, ok := qqs.channel.Account(acct); ok {
				return a, a, true
			}
		case ch == feishu.ChannelID && larks != nil:
			if a, ok := larks.lookup(acct); ok {
				// Feishu's files are read with its own tool.
				return nil, a, true
			}
		}
		return nil, nil, false
	}
}

// pruneStaged deletes the pictures and voice notes staged under root (in
// each chat's media/inbound, root/<channel>/<account>/<chat>) before
// before, and reports how many. Only those folders are read, not the whole
// workspace. Only the turns a run answers show their pictures, so an old
// file is not needed; one that comes again is staged again.
func pruneStaged(root string, before time.Time) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "*", "*", "*", "media", "inbound"))
	if err != nil {
		return 0, fmt.Errorf("prune staged media: %w", err)
	}
	n := 0
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // gone meanwhile
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(before) {
				continue
			}
			if os.Remove(filepath.Join(dir, e.Name())) == nil {
				n++
			}
		}
	}
	return n, nil
}

// chatsDirs are the folders of root that hold chats' files, one per
// channel: a reply in one chat sends nothing from another's.
func chatsDirs(root string) []string {
	var out []string
	for _, ch := range []msg.ChannelID{onebot.ChannelID, feishu.ChannelID, webchat.ID} {
		out = append(out, filepath.Join(root, safeName(string(ch))))
	}
	return out
}

// sendRoots are the directories besides the workspace a reply may send
// local files from: media.sendFrom, and the system's temporary directory
// with media.sendFromTemp.
func sendRoots(m config.Media) []string {
	roots := slices.Clone(m.SendFrom)
	if m.SendFromTemp {
		roots = append(roots, os.TempDir())
	}
	return roots
}
