package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
)

// Who speaks in the Feishu simulator.
const (
	simLarkGroup = "oc_pincer_sim_group"
	simLarkUser  = "ou_pincer_sim_user"
	simLarkPeer  = "ou_pincer_sim_peer"
	simLarkP2P   = "oc_pincer_sim_p2p"
)

// feishuSim runs a simulated Feishu open platform: pincer is pointed at it
// with domain, it posts the lines typed on in to pincer's webhook as
// users' messages, and prints what the bot sends to out.
func feishuSim(args []string, in io.Reader, out, stderr io.Writer) int {
	fs := newFlags("dev feishu-sim", "dev feishu-sim [flags]", `A simulated Feishu open platform: point channels.feishu.domain at it (webhook
mode), run pincer serve, and type lines to post them to pincer's webhook as
users' messages; what the bot sends is printed.
`, stderr)
	listen := fs.String("listen", "127.0.0.1:3002", "address of the simulated open platform")
	webhook := fs.String("webhook", "http://127.0.0.1:18789/feishu/events", "pincer's webhook, where events are posted")
	name := fs.String("name", "测试用户", "the name lines are sent as")
	if code, ok := parseFlags(fs, args, out); !ok {
		return code
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "pincer dev feishu-sim: %v\n", err)
		return 1
	}
	sim := feishusim.New(feishusim.Options{})
	for _, err := range []error{
		sim.AddUser(simLarkUser, *name), sim.AddUser(simLarkPeer, "李四"),
		sim.AddChat(simLarkGroup, feishusim.ChatGroup), sim.AddP2PChat(simLarkP2P, simLarkUser),
	} {
		if err != nil {
			fmt.Fprintf(stderr, "pincer dev feishu-sim: %v\n", err)
			return 1
		}
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	o := sim.Options()
	p := &larkPrinter{out: out}
	p.printf("Feishu open platform simulator on http://%s; events go to %s\n", ln.Addr(), *webhook)
	p.printf("Point pincer at it:\n  channels: { feishu: { appId: '%s', appSecret: '%s', domain: 'http://%s',\n    mode: 'webhook', verificationToken: '%s' } }\n",
		o.AppID, o.AppSecret, ln.Addr(), o.VerificationToken)
	p.printf("Type a line to say it in the group as %s; start it with @ to mention the bot, with /dm to say it\n", *name)
	p.printf("privately, or /forward to send a nested merged forward of the group's last lines. Ctrl-D quits.\n")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go p.watch(ctx, sim)
	s := &larkSession{sim: sim, webhook: *webhook, p: p}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if text := strings.TrimSpace(lines.Text()); text != "" {
			s.say(ctx, text)
		}
	}
	time.Sleep(200 * time.Millisecond) // what was sent last is printed
	return 0
}

// larkSession turns typed lines into users' messages.
type larkSession struct {
	sim     *feishusim.Sim
	webhook string
	p       *larkPrinter
	said    []feishusim.Message // the group's recent lines, for /forward
}

func (s *larkSession) say(ctx context.Context, text string) {
	botMention := []feishusim.Mention{{Key: "@_user_1", ID: s.sim.Options().BotOpenID, Name: s.sim.Options().BotName}}
	var m feishusim.Message
	switch {
	case strings.HasPrefix(text, "/dm "):
		m = feishusim.Message{ChatID: simLarkP2P, SenderID: simLarkUser, Content: larkText(strings.TrimPrefix(text, "/dm "))}
	case text == "/forward":
		m = s.forward(botMention)
	case strings.HasPrefix(text, "@"):
		rest := strings.TrimSpace(strings.TrimPrefix(text, "@"))
		m = feishusim.Message{ChatID: simLarkGroup, SenderID: simLarkUser, Content: larkText("@_user_1 " + rest), Mentions: botMention}
	default:
		m = feishusim.Message{ChatID: simLarkGroup, SenderID: simLarkUser, Content: larkText(text)}
	}
	if m.ChatID == simLarkGroup && m.MsgType == "" {
		s.said = append(s.said, m)
		if len(s.said) > 5 {
			s.said = s.said[1:]
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := s.sim.PostEvent(dctx, s.webhook, m, feishusim.EventOptions{})
	switch {
	case err != nil:
		s.p.printf("(could not deliver: %v; is pincer serving %s?)\n", err, s.webhook)
	case d.Status != http.StatusOK:
		s.p.printf("(pincer answered %d: %s)\n", d.Status, strings.TrimSpace(string(d.Response)))
	}
}

// forward builds a merged forward of the group's last lines, with a
// nested forward inside, @-ing the bot.
func (s *larkSession) forward(botMention []feishusim.Mention) feishusim.Message {
	now := time.Now()
	var children []feishusim.Message
	for i, m := range s.said {
		children = append(children, feishusim.Message{SenderID: m.SenderID, Content: m.Content, Mentions: m.Mentions, CreateTime: now.Add(time.Duration(i-len(s.said)) * time.Minute)})
	}
	if len(children) == 0 {
		children = append(children, feishusim.Message{SenderID: simLarkUser, Content: larkText("（没有可转发的消息）"), CreateTime: now.Add(-time.Minute)})
	}
	children = append(children, feishusim.Message{
		MsgType: "merge_forward", SenderID: simLarkUser, CreateTime: now,
		Children: []feishusim.Message{
			{SenderID: simLarkPeer, Content: larkText("[告警] CPU > 90%"), CreateTime: now.Add(-24 * time.Hour)},
			{SenderID: simLarkPeer, MsgType: "image", Content: `{"image_key":"img_sim"}`, CreateTime: now.Add(-24*time.Hour + time.Minute)},
		},
	})
	return feishusim.Message{ChatID: simLarkGroup, MsgType: "merge_forward", SenderID: simLarkUser, Mentions: botMention, Children: children}
}

func larkText(s string) string {
	b, _ := json.Marshal(map[string]string{"text": s})
	return string(b)
}

// larkPrinter prints what the bot does on the platform.
type larkPrinter struct {
	mu  sync.Mutex
	out io.Writer
}

func (p *larkPrinter) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format, args...)
}

// watch prints the bot's new messages and reactions until ctx ends; a
// streaming card once its streaming is closed, with its final text.
func (p *larkPrinter) watch(ctx context.Context, sim *feishusim.Sim) {
	sent, reacted, removed := 0, 0, map[string]bool{}
	streaming := map[string]string{} // card id → where its message is
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rs := sim.Reactions()
		for _, r := range rs[reacted:] {
			p.printf("(bot reacted %s)\n", r.EmojiType)
		}
		reacted = len(rs)
		msgs := sim.Sent()
		for _, m := range msgs[sent:] {
			where := "group"
			if m.ChatID == simLarkP2P || m.ReceiveIDType == "open_id" {
				where = "private"
			}
			if id := cardEntity(m); id != "" {
				streaming[id] = where
				continue
			}
			p.printf("[%s] bot: %s\n", where, sentBody(m))
		}
		sent = len(msgs)
		for _, c := range sim.Cards() {
			if where, ok := streaming[c.ID]; ok && !c.Streaming {
				delete(streaming, c.ID)
				p.printf("[%s] bot (card): %s\n", where, strings.Join(slices.Sorted(maps.Values(c.Elements)), "\n\n"))
			}
		}
		for _, r := range rs {
			if r.Removed && !removed[r.ReactionID] {
				removed[r.ReactionID] = true
				p.printf("(bot removed %s)\n", r.EmojiType)
			}
		}
	}
}

// cardEntity is the card entity an interactive message shows, "" for a
// message that shows none.
func cardEntity(m feishusim.SentMessage) string {
	var ref struct {
		Type string `json:"type"`
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	if m.MsgType != "interactive" || json.Unmarshal([]byte(m.Content), &ref) != nil || ref.Type != "card" {
		return ""
	}
	return ref.Data.CardID
}

// sentBody is the readable text of a sent message: a text's text, a
// post's markdown paragraphs, else the raw content.
func sentBody(m feishusim.SentMessage) string {
	switch m.MsgType {
	case "text":
		var t struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(m.Content), &t) == nil {
			return t.Text
		}
	case "post":
		var p map[string]struct {
			Content [][]struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(m.Content), &p) == nil {
			for _, loc := range p {
				var parts []string
				for _, row := range loc.Content {
					for _, el := range row {
						parts = append(parts, el.Text)
					}
				}
				return strings.Join(parts, "\n\n")
			}
		}
	}
	return m.Content
}

var errNoSim = errors.New("pincer dev: want onebot-sim or feishu-sim")
