package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Frame is one pre-encoded OneBot event frame.
type Frame struct {
	Data    []byte
	ID      int64 // message_id
	Group   int64
	Mention bool // an @ of the bot, which expects a reply quoting ID
	// Quotes is the message_id its reply segment quotes, 0 for none.
	Quotes int64
}

// Load is the frames of one run, in the order they are sent.
type Load struct {
	Frames []Frame
	// Mentions counts the frames that @ the bot, Quoting the frames that
	// reply to another message.
	Mentions, Quoting int
	// Bytes is the frames' total size.
	Bytes int
}

// Messages from before pincer started, which frames quote: ids in
// [earlierIDs, earlierIDs+earlierCount), someone else's, as get_msg of
// the simulator says.
const (
	earlierIDs   = 800_000_000
	earlierCount = 1_000_000
)

// shape says what frames a run sends.
type shape struct {
	self    int64
	count   int  // frames in all
	groups  int  // over this many groups
	senders int  // from this many senders
	every   int  // every every-th frame @s the bot; 0: none
	finalAt bool // the last frame (one more) @s the bot in the first group
	// quotes is the share of the other frames that reply to another
	// message, as QQ users do, with a reply segment and no @ after it:
	// half of them an earlier frame of their group, half a message from
	// before pincer started, whose author only get_msg knows.
	quotes   float64
	firstID  int64 // message_id of the first frame
	unixTime int64 // the events' time field
	seed     uint64
}

// Group and sender numbers: QQ groups and users look like these.
const (
	firstGroup  = 700000001
	firstSender = 20000001
)

// generate pre-encodes a run's frames as NapCat sends them: array
// segments, raw_message as CQ codes, sender with nickname, card and role,
// message_seq and the string real_seq. Plain messages go to random groups
// from random senders; the @s of the bot go round the groups in turn, so
// two @s in one group are as far apart as the run allows, and carry their
// own message_id in their text ("(#123)"), which the fake model echoes.
func generate(s shape) Load {
	rng := rand.New(rand.NewPCG(s.seed, s.seed^0x9e3779b97f4a7c15))
	n := s.count
	if s.finalAt {
		n++
	}
	load := Load{Frames: make([]Frame, 0, n)}
	mentions := 0
	earlier := map[int64][]int64{} // group -> its frames' ids so far
	for i := range n {
		id := s.firstID + int64(i)
		mention := s.every > 0 && i%s.every == s.every-1 && i < s.count
		group := firstGroup + int64(rng.IntN(s.groups))
		switch {
		case s.finalAt && i == s.count:
			mention, group = true, firstGroup
		case mention:
			group = firstGroup + int64(mentions%s.groups)
		}
		who := rng.IntN(s.senders)
		var segs []segment
		if mention {
			mentions++
			segs = append(segs,
				segment{Type: "at", Data: map[string]string{"qq": strconv.FormatInt(s.self, 10), "name": "pincer"}},
				segment{Type: "text", Data: map[string]string{"text": " " + question(rng) + " " + Token(id)}})
		} else {
			segs = chatter(rng, s.senders)
		}
		var quotes int64
		if !mention && s.quotes > 0 && rng.Float64() < s.quotes {
			if prev := earlier[group]; len(prev) > 0 && rng.IntN(2) == 0 {
				quotes = prev[rng.IntN(len(prev))]
			} else {
				quotes = earlierIDs + int64(rng.IntN(earlierCount))
			}
			segs = append([]segment{{Type: "reply", Data: map[string]string{"id": strconv.FormatInt(quotes, 10)}}}, segs...)
			load.Quoting++
		}
		if s.quotes > 0 {
			earlier[group] = append(earlier[group], id)
		}
		ev := event{
			SelfID: s.self, UserID: firstSender + int64(who), Time: s.unixTime,
			MessageID: id, MessageSeq: id, RealID: id, RealSeq: strconv.FormatInt(id-s.firstID+1, 10),
			MessageType: "group",
			Sender: sender{
				UserID: firstSender + int64(who), Nickname: nickname(who), Card: card(who), Role: role(who),
			},
			RawMessage: cqString(segs), Font: 14, SubType: "normal", Message: segs, MessageFormat: "array",
			PostType: "message", GroupID: group,
		}
		data, err := json.Marshal(ev)
		if err != nil {
			// Plain strings and numbers always encode.
			continue
		}
		load.Frames = append(load.Frames, Frame{Data: data, ID: id, Group: group, Mention: mention, Quotes: quotes})
		load.Bytes += len(data)
	}
	load.Mentions = mentions
	return load
}

// Token is how an @'s message_id appears in its text, and in the fake
// model's reply to it.
func Token(id int64) string { return "(#" + strconv.FormatInt(id, 10) + ")" }

// tokenID finds the last token in s.
func tokenID(s string) (int64, bool) {
	i := strings.LastIndex(s, "(#")
	if i < 0 {
		return 0, false
	}
	rest := s[i+2:]
	j := strings.IndexByte(rest, ')')
	if j <= 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(rest[:j], 10, 64)
	return id, err == nil
}

// event is a group message event in NapCat's field order.
type event struct {
	SelfID        int64     `json:"self_id"`
	UserID        int64     `json:"user_id"`
	Time          int64     `json:"time"`
	MessageID     int64     `json:"message_id"`
	MessageSeq    int64     `json:"message_seq"`
	RealID        int64     `json:"real_id"`
	RealSeq       string    `json:"real_seq"`
	MessageType   string    `json:"message_type"`
	Sender        sender    `json:"sender"`
	RawMessage    string    `json:"raw_message"`
	Font          int       `json:"font"`
	SubType       string    `json:"sub_type"`
	Message       []segment `json:"message"`
	MessageFormat string    `json:"message_format"`
	PostType      string    `json:"post_type"`
	GroupID       int64     `json:"group_id"`
}

type sender struct {
	UserID   int64  `json:"user_id"`
	Nickname string `json:"nickname"`
	Card     string `json:"card"`
	Role     string `json:"role"`
}

type segment struct {
	Type string            `json:"type"`
	Data map[string]string `json:"data"`
}

var (
	names = []string{"小明", "阿强", "Alice", "老王", "星星", "Bob", "橘子", "momo", "大刘", "晴天", "Kevin", "小雨"}
	// phrases are pieces of group chat; a message is one to a few of them.
	phrases = []string{
		"哈哈哈", "确实", "有人在吗", "今天好热啊", "晚上一起吃饭吗", "我刚下班", "这个版本更新了什么",
		"周末去爬山吧，天气预报说是晴天", "收到", "好的好的", "图片挂了，能再发一次吗", "笑死",
		"昨天那个问题解决了没有", "我觉得还行，就是有点贵", "明天几点集合？", "+1", "路上堵车了，晚点到",
		"有没有人知道这个报错是什么意思", "刚才网断了", "群文件里有教程", "谢谢大佬", "早上好",
		"这周的会议改到周四下午三点了，大家记得看一下日程", "666", "那就这么定了", "我先去忙了，回头聊",
		"你们看新闻了吗", "这个价格可以接受", "等我一下", "已经发到群里了",
	}
	questions = []string{
		"帮我总结一下刚才大家在聊什么", "明天天气怎么样？", "这个报错怎么解决", "推荐一家附近的餐厅",
		"你觉得哪个方案更好？", "翻译一下上面那句话", "现在几点了", "讲个笑话吧",
	}
)

func nickname(sender int) string { return names[sender%len(names)] + strconv.Itoa(sender) }

func card(sender int) string {
	if sender%3 == 0 {
		return ""
	}
	return names[(sender/7)%len(names)] + "-" + strconv.Itoa(sender%100)
}

func role(sender int) string {
	switch {
	case sender%97 == 0:
		return "owner"
	case sender%31 == 0:
		return "admin"
	}
	return "member"
}

func question(rng *rand.Rand) string { return questions[rng.IntN(len(questions))] }

// chatter is a plain message of realistic length: mostly a few words,
// some a long paragraph; now and then a QQ face or an @ of someone else.
func chatter(rng *rand.Rand, senders int) []segment {
	pieces := 1
	switch r := rng.IntN(100); {
	case r < 60:
	case r < 90:
		pieces = 2 + rng.IntN(2)
	default:
		pieces = 5 + rng.IntN(6)
	}
	var b strings.Builder
	for i := range pieces {
		if i > 0 {
			b.WriteString("，")
		}
		b.WriteString(phrases[rng.IntN(len(phrases))])
	}
	var segs []segment
	if rng.IntN(20) == 0 {
		other := rng.IntN(senders)
		segs = append(segs, segment{Type: "at", Data: map[string]string{"qq": strconv.Itoa(firstSender + other), "name": nickname(other)}},
			segment{Type: "text", Data: map[string]string{"text": " "}})
	}
	segs = append(segs, segment{Type: "text", Data: map[string]string{"text": b.String()}})
	if rng.IntN(10) == 0 {
		segs = append(segs, segment{Type: "face", Data: map[string]string{"id": strconv.Itoa(1 + rng.IntN(300))}})
	}
	return segs
}

// cqString is the raw_message of segments: text escaped, the rest as CQ
// codes.
func cqString(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Type == "text" {
			b.WriteString(cqEscape(s.Data["text"], false))
			continue
		}
		fmt.Fprintf(&b, "[CQ:%s", s.Type)
		for _, k := range []string{"qq", "id", "name"} {
			if v, ok := s.Data[k]; ok {
				fmt.Fprintf(&b, ",%s=%s", k, cqEscape(v, true))
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

func cqEscape(s string, param bool) string {
	r := strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;")
	if param {
		r = strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;", ",", "&#44;")
	}
	return r.Replace(s)
}
