package trigger

import (
	"strings"
	"testing"
	"unicode"

	"github.com/pincerbot/pincer/internal/msg"
)

const self = msg.UserID("123456789")

func defaults() Rules {
	return Rules{Enabled: true, RequireMentionInGroup: true, KeywordMatch: Contains, TriggerOnReplyToSelf: true, AlwaysReplyInDirect: true}
}

func group(text string) msg.Message {
	return msg.Message{Peer: msg.Peer{Kind: msg.Group, ID: "20000002"}, Text: text, Segments: []msg.Segment{msg.Text(text)}}
}

func direct(text string) msg.Message {
	return msg.Message{Peer: msg.Peer{Kind: msg.Direct, ID: "10001"}, Text: text}
}

var bot = Bot{Self: self, SentByBot: func(id msg.MessageID) (bool, bool) { return id == "bot-1", true }}

// TestSpecTimeline is the mention timeline of the receive-modes spec: group
// 20000002, selfId 123456789, keywords ["天气"], everything else default.
func TestSpecTimeline(t *testing.T) {
	r := defaults()
	r.Keywords = []string{"天气"}
	e, _ := New(r)
	mentionC := group("@机器人帮我算一下 1+1")
	mentionC.Mentions = []msg.UserID{self}
	replyD := group("谢谢")
	replyD.ReplyTo = "bot-1"
	atAllE := group("@全体成员大家注意一下")
	atAllE.AtAll = true
	steps := []struct {
		at   string
		m    msg.Message
		want Decision
	}{
		{"10:00:00", group("今天天气怎么样"), Decision{Triggered: true, Reason: msg.TriggerKeyword, Keyword: "天气"}},
		{"10:00:05", group("在吗"), Decision{}},
		{"10:00:10", mentionC, Decision{Triggered: true, Reason: msg.TriggerMention}},
		{"10:00:15", replyD, Decision{Triggered: true, Reason: msg.TriggerReplyToSelf}},
		{"10:00:20", atAllE, Decision{}},
	}
	for _, s := range steps {
		if got := e.Evaluate(s.m, bot); !sameVerdict(got, s.want) {
			t.Errorf("%s %q: got %+v, want %+v", s.at, s.m.Text, got, s.want)
		}
	}
}

func TestRuleOrder(t *testing.T) {
	mentioned := group("hi")
	mentioned.Mentions = []msg.UserID{self}
	reply := group("thanks")
	reply.ReplyTo = "bot-1"
	tests := []struct {
		name  string
		rules func(*Rules)
		m     msg.Message
		bot   Bot
		want  Decision
	}{
		{"disabled overrides even direct chats and keywords", func(r *Rules) { r.Enabled = false; r.Keywords = []string{"hi"} }, direct("hi"), bot, Decision{}},
		{"direct", nil, direct("anything"), bot, Decision{Triggered: true, Reason: msg.TriggerDirect}},
		{"direct by keyword when not always", func(r *Rules) { r.AlwaysReplyInDirect = false; r.Keywords = []string{"help"} }, direct("need help"), bot, Decision{Triggered: true, Reason: msg.TriggerKeyword, Keyword: "help"}},
		{"direct without keyword when not always", func(r *Rules) { r.AlwaysReplyInDirect = false }, direct("hello"), bot, Decision{}},
		{"mention needs a known self", nil, mentioned, Bot{SentByBot: bot.SentByBot}, Decision{}},
		{"mention wins over keyword", func(r *Rules) { r.Keywords = []string{"hi"} }, mentioned, bot, Decision{Triggered: true, Reason: msg.TriggerMention}},
		{"reply to self off", func(r *Rules) { r.TriggerOnReplyToSelf = false }, reply, bot, Decision{}},
		{"reply to someone else", nil, func() msg.Message { m := group("x"); m.ReplyTo = "other"; return m }(), bot, Decision{}},
		{"no mention required, no keywords: everything, without a reason", func(r *Rules) { r.RequireMentionInGroup = false }, group("chat"), bot, Decision{Triggered: true}},
		{"no mention required but keywords that miss", func(r *Rules) { r.RequireMentionInGroup = false; r.Keywords = []string{"bot"} }, group("chat"), bot, Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			if tt.rules != nil {
				tt.rules(&r)
			}
			e, _ := New(r)
			if got := e.Evaluate(tt.m, tt.bot); !sameVerdict(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestKeywordMatching(t *testing.T) {
	tests := []struct {
		match    Match
		caseSens bool
		keyword  string
		text     string
		want     bool
	}{
		{Contains, false, "Bot", "hey BOT there", true},
		{Contains, true, "Bot", "hey BOT there", false},
		{Prefix, false, "小助手", "  小助手 在吗", true},
		{Prefix, false, "小助手", "叫小助手", false},
		{Exact, false, "help", " HELP ", true},
		{Exact, false, "help", "help me", false},
		{Regex, false, `^天气\s*\d+`, "天气 12", true},
		{Regex, false, `^天气\s*\d+`, "明天天气", false},
		{Regex, true, `Go+gle`, "gooogle", false},
		{Regex, false, `Go+gle`, "gooogle", true},
	}
	for _, tt := range tests {
		r := defaults()
		r.KeywordMatch, r.CaseSensitive, r.Keywords = tt.match, tt.caseSens, []string{tt.keyword}
		e, warnings := New(r)
		if len(warnings) > 0 {
			t.Fatal(warnings)
		}
		if got := e.Evaluate(group(tt.text), bot).Triggered; got != tt.want {
			t.Errorf("%s(case %v) %q in %q: got %v", tt.match, tt.caseSens, tt.keyword, tt.text, got)
		}
	}
}

func TestInvalidRegexIsSkippedWithAWarning(t *testing.T) {
	r := defaults()
	r.KeywordMatch, r.Keywords = Regex, []string{"(x", "ok"}
	e, warnings := New(r)
	if len(warnings) != 1 {
		t.Fatalf("warnings %v", warnings)
	}
	if !e.Evaluate(group("ok then"), bot).Triggered || e.Evaluate(group("(x"), bot).Triggered {
		t.Error("the valid keyword still works; the invalid one never matches")
	}
}

func TestStripLeadingMention(t *testing.T) {
	at := msg.Segment{Kind: msg.SegAt, Target: self, Name: "机器人"}
	tests := []struct {
		name string
		m    msg.Message
		want string
	}{
		{"name", msg.Message{Text: "@机器人 帮我查天气", Segments: []msg.Segment{at, msg.Text(" 帮我查天气")}}, "帮我查天气"},
		{"number", msg.Message{Text: "@123456789帮我", Segments: []msg.Segment{{Kind: msg.SegAt, Target: self}, msg.Text("帮我")}}, "帮我"},
		{"after a reply segment", msg.Message{Text: "@机器人 hi", Segments: []msg.Segment{{Kind: msg.SegReply, ID: "1"}, at, msg.Text(" hi")}}, "hi"},
		{"raw CQ code", msg.Message{Text: "[CQ:at,qq=123456789] hi", Segments: []msg.Segment{msg.Text("[CQ:at,qq=123456789] hi")}}, "hi"},
		{"only once", msg.Message{Text: "@机器人 @机器人 hi", Segments: []msg.Segment{at, msg.Text(" "), at, msg.Text(" hi")}}, "@机器人 hi"},
		{"someone else first", msg.Message{Text: "@张三 hi", Segments: []msg.Segment{{Kind: msg.SegAt, Target: "1", Name: "张三"}, msg.Text(" hi")}}, "@张三 hi"},
		{"not at the start", msg.Message{Text: "hi @机器人", Segments: []msg.Segment{msg.Text("hi "), at}}, "hi @机器人"},
	}
	for _, tt := range tests {
		if got := StripLeadingMention(tt.m, self); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := StripLeadingMention(tests[0].m, ""); got != tests[0].m.Text {
		t.Errorf("unknown self strips nothing: %q", got)
	}
}

// TestQuotedAuthorSettlesReplyToSelf: when the platform names the quoted
// message's author, the bot is not asked whose message it was.
func TestQuotedAuthorSettlesReplyToSelf(t *testing.T) {
	e, _ := New(Rules{Enabled: true, RequireMentionInGroup: true, TriggerOnReplyToSelf: true})
	asked := 0
	b := Bot{Self: self, SentByBot: func(msg.MessageID) (bool, bool) { asked++; return true, true }}
	m := msg.Message{Peer: msg.Peer{Kind: msg.Group, ID: "g"}, ReplyTo: "9", ReplyToSender: "someone-else", Text: "同意"}
	if d := e.Evaluate(m, b); d.Triggered || asked != 0 {
		t.Errorf("a reply to someone else: %+v, asked %d times", d, asked)
	}
	m.ReplyToSender = self
	if d := e.Evaluate(m, b); !d.Triggered || d.Reason != msg.TriggerReplyToSelf || asked != 0 {
		t.Errorf("a reply to the bot: %+v, asked %d times", d, asked)
	}
	m.ReplyToSender = ""
	if d := e.Evaluate(m, b); !d.Triggered || asked != 1 {
		t.Errorf("an unknown author: %+v, asked %d times", d, asked)
	}
}

// TestReplyOfUnknownAuthorIsPending: a reply whose author only the
// platform can tell does not trigger yet and says so (Pending), unless a
// later rule settles it; the reply rule never waits for the platform.
func TestReplyOfUnknownAuthorIsPending(t *testing.T) {
	unknown := Bot{Self: self, SentByBot: func(msg.MessageID) (bool, bool) { return false, false }}
	m := group("谢谢")
	m.ReplyTo = "-2093321870"
	r := defaults()
	r.Keywords = []string{"天气"}
	e, _ := New(r)
	d := e.Evaluate(m, unknown)
	if d.Triggered || !d.Pending || !strings.Contains(d.Why, "asked of the platform") {
		t.Errorf("unknown author: %+v", d)
	}
	m.Text = "天气如何"
	if d := e.Evaluate(m, unknown); !d.Triggered || d.Reason != msg.TriggerKeyword || d.Pending {
		t.Errorf("a keyword settles it without the platform: %+v", d)
	}
	m.Text = "谢谢"
	m.Mentions = []msg.UserID{self}
	if d := e.Evaluate(m, unknown); !d.Triggered || d.Reason != msg.TriggerMention || d.Pending {
		t.Errorf("an @ settles it: %+v", d)
	}
	m.Mentions = nil
	r.TriggerOnReplyToSelf = false
	off, _ := New(r)
	if d := off.Evaluate(m, unknown); d.Triggered || d.Pending {
		t.Errorf("triggerOnReplyToSelf off asks nothing: %+v", d)
	}
	if d := e.Evaluate(direct("谢谢"), unknown); !d.Triggered || d.Pending {
		t.Errorf("a direct message: %+v", d)
	}
	r.RequireMentionInGroup, r.Keywords = false, nil
	all, _ := New(r)
	if d := all.Evaluate(m, unknown); !d.Triggered || d.Pending {
		t.Errorf("every group message triggers: %+v", d)
	}
}

// sameVerdict compares decisions without their explanation, which
// TestWhyNamesTheRules checks.
func sameVerdict(a, b Decision) bool {
	a.Why, b.Why = "", ""
	return a == b
}

// TestWhyNamesTheRules: every decision explains itself; one that did not
// trigger names each rule that did not match, including the @ QQ puts
// after a quote, which is read as the reply's automatic mention.
func TestWhyNamesTheRules(t *testing.T) {
	bot := Bot{Self: "10000", SentByBot: func(id msg.MessageID) (bool, bool) { return id == "bot-1", true }}
	rules := Rules{Enabled: true, RequireMentionInGroup: true, Keywords: []string{"天气"}, TriggerOnReplyToSelf: false}
	e, _ := New(rules)
	g := func(text string) msg.Message {
		return msg.Message{Peer: msg.Peer{Kind: msg.Group, ID: "1"}, Text: text}
	}
	quoted := g("谢谢")
	quoted.ReplyTo, quoted.ReplyToSender = "bot-1", "10000"
	for _, tc := range []struct {
		m    msg.Message
		want []string
	}{
		{g("在吗"), []string{"no @ of the bot", `no keyword matched (contains match of "天气")`, "requireMentionInGroup is on"}},
		{quoted, []string{"read as the reply's automatic @ of the quoted message's author", "triggerOnReplyToSelf is off"}},
		{g("今天天气"), []string{`the keyword "天气" (contains match)`}},
	} {
		d := e.Evaluate(tc.m, bot)
		for _, w := range tc.want {
			if !strings.Contains(d.Why, w) {
				t.Errorf("%q: why %q lacks %q", tc.m.Text, d.Why, w)
			}
		}
	}
	if d := e.Evaluate(g("在吗"), Bot{}); !strings.Contains(d.Why, "the bot's own id is not known") {
		t.Errorf("unknown self: %q", d.Why)
	}
	off, _ := New(Rules{})
	if d := off.Evaluate(g("x"), bot); !strings.Contains(d.Why, "receive.mention.enabled is off") {
		t.Errorf("disabled: %q", d.Why)
	}
}

// TestChatterIsExplainedWithoutAllocating: the explanation of a group
// message that triggers nothing, most of a busy group's messages, is
// worded in advance.
func TestChatterIsExplainedWithoutAllocating(t *testing.T) {
	e, _ := New(Rules{Enabled: true, RequireMentionInGroup: true, TriggerOnReplyToSelf: true, Keywords: []string{"天气"}})
	m := msg.Message{Peer: msg.Peer{Kind: msg.Group, ID: "1"}, Text: "随便聊聊", ReplyTo: "5"}
	bot := Bot{Self: "10000", SentByBot: func(msg.MessageID) (bool, bool) { return false, true }}
	var d Decision
	if n := testing.AllocsPerRun(100, func() { d = e.Evaluate(m, bot) }); n != 0 {
		t.Errorf("%v allocations per message", n)
	}
	if d.Triggered || !strings.Contains(d.Why, "not the bot's") {
		t.Errorf("decision %+v", d)
	}
}

// FuzzToLower holds toLower to strings.ToLower.
func FuzzToLower(f *testing.F) {
	for _, s := range []string{"", "hello", "Hello", "今晚几点集合？我八点以后有空，你们呢", "ＡＢＣ全角", "ａｂｃ", "Ünïcödé", "ΣΑΣ", "한국어 Ok", "カタカナ", "İ", "\xff\xfeX", "ǅ", "\x84", "中\x84"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := toLower(s), strings.ToLower(s); got != want {
			t.Fatalf("toLower(%q) = %q, strings.ToLower %q", s, got, want)
		}
	})
}

// BenchmarkToLowerChinese lowers a message of Chinese text, as the
// keyword check does for every message of a chat.
func BenchmarkToLowerChinese(b *testing.B) {
	s := "今晚几点集合？我八点以后有空，你们呢 ok 😀"
	b.ReportAllocs()
	for b.Loop() {
		if toLower(s) != s {
			b.Fatal("changed")
		}
	}
}

// TestCaselessRunesHaveNoLowerCase checks every rune caseless reports
// against the Unicode tables.
func TestCaselessRunesHaveNoLowerCase(t *testing.T) {
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if caseless(r) {
			n++
			if unicode.ToLower(r) != r {
				t.Fatalf("caseless(%U), but its lower case is %U", r, unicode.ToLower(r))
			}
		}
	}
	if n == 0 {
		t.Fatal("no rune is caseless")
	}
}
