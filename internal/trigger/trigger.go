// Package trigger decides whether a message asks for a reply: a direct
// chat, a mention of the bot, a reply to one of its messages, or a keyword,
// in that order. It also strips the leading mention of the bot from the
// text the agent reads.
package trigger

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
)

// Match is how keywords are compared with a message's text.
type Match string

// Keyword matching modes.
const (
	Contains Match = "contains"
	Prefix   Match = "prefix"
	Exact    Match = "exact"
	Regex    Match = "regex"
)

// Rules are the mention settings.
type Rules struct {
	Enabled               bool
	RequireMentionInGroup bool
	Keywords              []string
	KeywordMatch          Match
	CaseSensitive         bool
	TriggerOnReplyToSelf  bool
	AlwaysReplyInDirect   bool
}

// Decision is the outcome for one message. Reason is empty when a group
// message triggers only because mentions are not required and no keywords
// are configured.
type Decision struct {
	Triggered bool
	Reason    msg.TriggerReason
	Keyword   string
	// Why says in words which rule matched or, for a message that did
	// not trigger, every rule that did not match and why: what an
	// operator asking "why did it (not) reply?" reads.
	Why string
	// Pending marks a message that did not trigger but would as a reply
	// to one of the bot's messages, which only the platform can tell
	// (Bot.SentByBot did not know): the caller asks it, off the chat's
	// order, and takes the message as a trigger when it is.
	Pending bool
}

// Bot is what the evaluator needs to know of the bot in a chat account.
type Bot struct {
	// Self is the bot's user id, empty while unknown: then no mention
	// can trigger.
	Self msg.UserID
	// SentByBot reports whether a message id is one of the bot's own, as
	// far as that is known without asking the platform: known is false
	// when only the platform can tell. It must not wait for the platform.
	SentByBot func(msg.MessageID) (mine, known bool)
}

// Evaluator applies Rules.
type Evaluator struct {
	rules    Rules
	keywords []keyword
	// whyNotDirect and whyNotGroup are the worded whyNot combinations.
	whyNotDirect string
	whyNotGroup  [mentionKinds][replyKinds]string
}

type keyword struct {
	word string // as configured
	cmp  string // folded unless case-sensitive
	re   *regexp.Regexp
}

// New compiles rules. Keywords that are not valid regular expressions
// under Regex are skipped and reported in warnings.
func New(r Rules) (*Evaluator, []string) {
	e := &Evaluator{rules: r}
	var warnings []string
	for _, k := range r.Keywords {
		if k == "" {
			continue
		}
		kw := keyword{word: k, cmp: k}
		if !r.CaseSensitive {
			kw.cmp = strings.ToLower(k)
		}
		if r.KeywordMatch == Regex {
			expr := k
			if !r.CaseSensitive {
				expr = "(?i)" + k
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("keyword %q is not a valid regular expression and is skipped: %v", k, err))
				continue
			}
			kw.re = re
		}
		e.keywords = append(e.keywords, kw)
	}
	e.whyNotDirect = e.wordWhyNot(false, 0, 0)
	for mention := range mentionKinds {
		for reply := range replyKinds {
			e.whyNotGroup[mention][reply] = e.wordWhyNot(true, mention, reply)
		}
	}
	return e, warnings
}

// Evaluate decides for m; the first matching rule wins. A reply whose
// quoted author only the platform knows does not hold the decision up:
// the later rules decide it, and when none triggers the decision is
// Pending (the keyword rule then wins over an unsettled reply to the bot).
func (e *Evaluator) Evaluate(m msg.Message, bot Bot) Decision {
	r := e.rules
	if !r.Enabled {
		return Decision{Why: "receive.mention.enabled is off: no message triggers a reply"}
	}
	group := m.Peer.Kind == msg.Group
	if !group && r.AlwaysReplyInDirect {
		return Decision{Triggered: true, Reason: msg.TriggerDirect, Why: "a direct message (receive.mention.alwaysReplyInDirect)"}
	}
	if group && bot.Self != "" && m.Mentioned(bot.Self) {
		return Decision{Triggered: true, Reason: msg.TriggerMention, Why: "an @ of the bot"}
	}
	// Whose message a reply quotes may be known only to the platform; the
	// later rules may settle the message without it.
	pending := false
	if group && r.TriggerOnReplyToSelf && m.ReplyTo != "" {
		mine, known := repliesToBot(m, bot)
		if mine {
			return Decision{Triggered: true, Reason: msg.TriggerReplyToSelf, Why: "a reply to the bot's message " + string(m.ReplyTo)}
		}
		pending = !known
	}
	if k, ok := e.keyword(m.Text); ok {
		return Decision{Triggered: true, Reason: msg.TriggerKeyword, Keyword: k, Why: fmt.Sprintf("the keyword %q (%s match)", k, e.match())}
	}
	if group && !r.RequireMentionInGroup && len(r.Keywords) == 0 {
		return Decision{Triggered: true, Why: "every group message triggers: receive.mention.requireMentionInGroup is off and no keywords are set"}
	}
	return Decision{Why: e.whyNot(m, bot, pending), Pending: pending}
}

// Why a group message did not mention the bot, and what it replied to:
// the parts of whyNot that vary with the message.
const (
	mentionNone = iota
	mentionSelfUnknown
	mentionAuto
	mentionAll
	mentionKinds
)

const (
	replyNone = iota
	replyOff
	replyOther
	replyAsked
	replyKinds
)

// whyNot lists the rules a message that did not trigger failed. The few
// combinations are worded once, by New: most messages of a busy group
// trigger nothing, and each is traced.
func (e *Evaluator) whyNot(m msg.Message, bot Bot, pending bool) string {
	if m.Peer.Kind != msg.Group {
		return e.whyNotDirect
	}
	mention := mentionNone
	switch {
	case bot.Self == "":
		mention = mentionSelfUnknown
	case m.ReplyToSender == bot.Self && m.ReplyTo != "":
		mention = mentionAuto
	case m.AtAll:
		mention = mentionAll
	}
	reply := replyNone
	switch {
	case m.ReplyTo == "":
	case !e.rules.TriggerOnReplyToSelf:
		reply = replyOff
	case pending:
		reply = replyAsked
	default:
		reply = replyOther
	}
	return e.whyNotGroup[mention][reply]
}

// wordWhyNot words one combination of whyNot.
func (e *Evaluator) wordWhyNot(group bool, mention, reply int) string {
	r := e.rules
	var why []string
	if !group {
		why = append(why, "a direct message, but receive.mention.alwaysReplyInDirect is off")
	} else {
		why = append(why, [mentionKinds]string{
			mentionNone:        "no @ of the bot",
			mentionSelfUnknown: "no @ of the bot can count yet: the bot's own id is not known",
			mentionAuto:        "no @ of the bot: the @ right after the reply segment was read as the reply's automatic @ of the quoted message's author",
			mentionAll:         "no @ of the bot (an @all never counts)",
		}[mention])
		switch reply {
		case replyOff:
			why = append(why, "it replies to a message, but receive.mention.triggerOnReplyToSelf is off")
		case replyOther:
			why = append(why, "it replies to a message that is not the bot's")
		case replyAsked:
			why = append(why, "it replies to a message pincer does not know: whose it is was asked of the platform, and a reply to the bot's message is answered once it says so")
		}
	}
	if len(e.keywords) == 0 {
		why = append(why, "no keywords are set")
	} else {
		words := make([]string, len(e.keywords))
		for i, k := range e.keywords {
			words[i] = strconv.Quote(k.word)
		}
		why = append(why, fmt.Sprintf("no keyword matched (%s match of %s)", e.match(), strings.Join(words, ", ")))
	}
	if group && r.RequireMentionInGroup {
		why = append(why, "receive.mention.requireMentionInGroup is on")
	}
	return strings.Join(why, "; ")
}

func (e *Evaluator) match() Match {
	if e.rules.KeywordMatch == "" {
		return Contains
	}
	return e.rules.KeywordMatch
}

func (e *Evaluator) keyword(text string) (string, bool) {
	folded := text
	if !e.rules.CaseSensitive {
		folded = toLower(text)
	}
	trimmed := strings.TrimSpace(folded)
	for _, k := range e.keywords {
		var hit bool
		switch e.rules.KeywordMatch {
		case Regex:
			hit = k.re.MatchString(text)
		case Prefix:
			hit = strings.HasPrefix(trimmed, k.cmp)
		case Exact:
			hit = trimmed == strings.TrimSpace(k.cmp)
		default:
			hit = strings.Contains(folded, k.cmp)
		}
		if hit {
			return k.word, true
		}
	}
	return "", false
}

// StripLeadingMention removes one leading mention of self from the
// rendered text of m, with the whitespace after it (ideographic spaces
// included): the "@name" (or "@<id>") the channel rendered for a leading
// mention segment of self, or a CQ at code of self typed as text, bare
// ("[CQ:at,qq=<self>]") or with other parameters in any order, as NapCat
// and LLOneBot print it ("[CQ:at,qq=<self>,name=…]"). Anything else is
// left as it is.
func StripLeadingMention(m msg.Message, self msg.UserID) string {
	text := m.Text
	if self == "" {
		return text
	}
	trimmed := strings.TrimLeft(text, " \t\r\n")
	var tokens []string
	for _, s := range m.Segments {
		if s.Kind == msg.SegText && strings.TrimSpace(s.Text) == "" {
			continue
		}
		if s.Kind == msg.SegReply {
			continue
		}
		if s.Kind == msg.SegAt && !s.AtAll && s.Target == self {
			if s.Name != "" {
				tokens = append(tokens, "@"+s.Name)
			}
			tokens = append(tokens, "@"+string(self))
		}
		break
	}
	for _, tok := range tokens {
		if rest, ok := strings.CutPrefix(trimmed, tok); ok {
			return strings.TrimLeft(rest, " \t\r\n\u3000")
		}
	}
	if rest, ok := cutTypedMention(trimmed, self); ok {
		return strings.TrimLeft(rest, " \t\r\n\u3000")
	}
	return text
}

// cutTypedMention cuts a CQ at code of self from the start of s: type
// "at" and a qq parameter of self (the last one, when there are several,
// as a CQ parser reads it), with any other parameters in any order. The
// code ends at the first ']': a CQ value escapes its brackets.
func cutTypedMention(s string, self msg.UserID) (string, bool) {
	body, ok := strings.CutPrefix(s, "[CQ:at,")
	if !ok {
		return s, false
	}
	end := strings.IndexByte(body, ']')
	if end < 0 {
		return s, false
	}
	qq := ""
	for p := range strings.SplitSeq(body[:end], ",") {
		if k, v, _ := strings.Cut(p, "="); k == "qq" {
			qq = v
		}
	}
	if qq != string(self) {
		return s, false
	}
	return body[end+1:], true
}

// repliesToBot reports whether m quotes one of the bot's messages: when the
// platform named the quoted message's author that settles it, else the
// bot says what it knows; known is false when only the platform can tell.
func repliesToBot(m msg.Message, bot Bot) (mine, known bool) {
	if m.ReplyToSender != "" {
		return bot.Self != "" && m.ReplyToSender == bot.Self, true
	}
	if bot.SentByBot == nil {
		return false, true
	}
	return bot.SentByBot(m.ReplyTo)
}

// toLower is strings.ToLower, without asking the Unicode tables about
// each character of a text that has nothing to lower: most of what a
// Chinese chat says is Han characters, kana, Hangul and full-width
// punctuation, none of which has a lower case, and strings.ToLower looks
// every one of them up (a tenth of a microsecond each, for every message
// of a busy chat).
func toLower(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				return strings.ToLower(s)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !caseless(r) && unicode.ToLower(r) != r {
			// strings.ToLower writes a byte that is not UTF-8 as U+FFFD.
			return strings.ToLower(s)
		}
		i += n
	}
	return s
}

// caseless reports the ranges of runes known to have no lower case: the
// CJK symbols and punctuation, kana, Han and Hangul syllables, and the
// full-width forms other than the Latin capitals.
func caseless(r rune) bool {
	switch {
	case 0x3000 <= r && r <= 0x30FF, // CJK symbols and punctuation, hiragana, katakana
		0x3400 <= r && r <= 0x4DBF, // CJK extension A
		0x4E00 <= r && r <= 0x9FFF, // CJK unified ideographs
		0xAC00 <= r && r <= 0xD7A3, // Hangul syllables
		0xFF00 <= r && r <= 0xFF20, // full-width punctuation and digits
		0xFF3B <= r && r <= 0xFFEF: // the rest of the full-width and half-width forms
		return true
	}
	return false
}
