package larkmsg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// fakeAPI answers Get from canned answers and Names from a table,
// counting the calls.
type fakeAPI struct {
	mu        sync.Mutex
	answers   map[string][]Item
	errs      map[string]error
	gets      map[string]int
	names     map[string]string
	namesErr  error
	nameCalls [][]string
}

func newFake() *fakeAPI {
	return &fakeAPI{answers: map[string][]Item{}, errs: map[string]error{}, gets: map[string]int{}, names: map[string]string{}}
}

func (f *fakeAPI) Get(_ context.Context, id string) ([]Item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets[id]++
	if err := f.errs[id]; err != nil {
		return nil, err
	}
	// A copy, as a decoded answer would be.
	return slices.Clone(f.answers[id]), nil
}

func (f *fakeAPI) Names(_ context.Context, ids []string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nameCalls = append(f.nameCalls, slices.Clone(ids))
	if f.namesErr != nil {
		return nil, f.namesErr
	}
	out := map[string]string{}
	for _, id := range ids {
		if n, ok := f.names[id]; ok {
			out[id] = n
		}
	}
	return out, nil
}

func (f *fakeAPI) totalGets() int {
	n := 0
	for _, c := range f.gets {
		n += c
	}
	return n
}

func (f *fakeAPI) expander() *Expander {
	return &Expander{Get: f.Get, Names: f.Names, BotName: "Helper"}
}

// container is a merge_forward's own item, as a GET answers it first.
func container(id string) Item {
	return Item{MessageID: id, MsgType: "merge_forward", CreateTime: "1760000100000", Body: Body{Content: MergeForwardText},
		Sender: Sender{ID: "ou_fwd", IDType: "open_id", SenderType: "user"}}
}

// userItem is a child sent by open_id sender at ms.
func userItem(id, upper, typ string, ms int64, sender, content string) Item {
	return Item{MessageID: id, UpperMessageID: upper, MsgType: typ, CreateTime: fmt.Sprint(ms),
		Sender: Sender{ID: sender, IDType: "open_id", SenderType: "user"}, Body: Body{Content: content}}
}

// t0 is 2026-10-08 09:12 in Asia/Shanghai, in ms; minute is a minute.
const (
	t0     = int64(1791421920000)
	minute = int64(60000)
)

// logRecords collects what a logger is given.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// attrs returns a record's attributes by key.
func attrs(r slog.Record) map[string]slog.Value {
	out := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		out[a.Key] = a.Value
		return true
	})
	return out
}

func expand(t *testing.T, e *Expander, id string) string {
	t.Helper()
	got, err := e.Expand(t.Context(), id)
	if err != nil {
		t.Fatalf("Expand(%s): %v", id, err)
	}
	return got
}

func wantText(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("excerpt:\n%s\nwant:\n%s", got, want)
	}
}

// The spec's first example: three children, text, image and file, come
// in any order and are listed by create_time with their own ids.
func TestExpandThreeChildren(t *testing.T) {
	f := newFake()
	f.names = map[string]string{"ou_zhang": "张三", "ou_li": "李四", "ou_wang": "王五"}
	f.answers["om_fwd"] = []Item{
		container("om_fwd"),
		userItem("om_child_file", "om_fwd", "file", t0+2*minute, "ou_wang", `{"file_key":"file_v3","file_name":"报告.pdf"}`),
		userItem("om_child_text", "om_fwd", "text", t0, "ou_zhang", `{"text":"大家好,这个告警看一下"}`),
		userItem("om_child_image", "om_fwd", "image", t0+minute, "ou_li", `{"image_key":"img_v3_x"}`),
	}
	got := expand(t, f.expander(), "om_fwd")
	wantText(t, got, `【合并转发,共 3 条】
[2026-10-08 09:12] 张三:大家好,这个告警看一下
[2026-10-08 09:13] 李四:[图片 msg=om_child_image]
[2026-10-08 09:14] 王五:[文件 报告.pdf msg=om_child_file]`)
	if strings.Contains(got, MergeForwardText) || strings.Contains(got, "om_fwd") {
		t.Error("the container leaks into the excerpt")
	}
	if f.totalGets() != 1 {
		t.Errorf("gets = %v, want one", f.gets)
	}
}

// Children with the same create_time keep the answer's order.
func TestExpandStableOrder(t *testing.T) {
	f := newFake()
	f.answers["om_fwd"] = []Item{
		container("om_fwd"),
		userItem("om_b", "om_fwd", "text", t0, "ou_1", `{"text":"第一"}`),
		userItem("om_c", "om_fwd", "text", t0, "ou_1", `{"text":"第二"}`),
		userItem("om_a", "om_fwd", "text", t0-minute, "ou_1", `{"text":"更早"}`),
		userItem("om_d", "om_fwd", "text", 0, "ou_1", `{"text":"时间坏了"}`),
	}
	f.answers["om_fwd"][4].CreateTime = "bad"
	got := expand(t, f.expander(), "om_fwd")
	wantText(t, got, `【合并转发,共 4 条】
[2026-10-08 09:11] ou_1:更早
[2026-10-08 09:12] ou_1:第一
[2026-10-08 09:12] ou_1:第二
[时间未知] ou_1:时间坏了`)
}

// @_user_N in a child reads as the name in that child's own mentions.
func TestExpandMentions(t *testing.T) {
	f := newFake()
	f.names = map[string]string{"ou_zhang": "张三"}
	text := userItem("om_1", "om_fwd", "text", t0, "ou_zhang", `{"text":"@_user_1 @_user_2 看下"}`)
	text.Mentions = []Mention{
		{Key: "@_user_1", ID: "ou_li", IDType: "open_id", Name: "李四"},
		{Key: "@_user_2", ID: "ou_zhao", IDType: "open_id", Name: "赵六"},
	}
	post := userItem("om_2", "om_fwd", "post", t0+minute, "ou_zhang", `{"title":"","content":[[{"tag":"at","user_id":"@_user_1"},{"tag":"text","text":"收到"}]]}`)
	post.Mentions = []Mention{{Key: "@_user_1", ID: "ou_wang", IDType: "open_id", Name: "王五"}}
	f.answers["om_fwd"] = []Item{container("om_fwd"), text, post}
	got := expand(t, f.expander(), "om_fwd")
	wantText(t, got, `【合并转发,共 2 条】
[2026-10-08 09:12] 张三:@李四 @赵六 看下
[2026-10-08 09:13] 张三:@王五 收到`)
}

// The reference's example answer: one GET returns the container, its
// children and the nested forward's children; no second GET is made.
func TestExpandReferenceExample(t *testing.T) {
	raw := `{"code": 0, "msg": "success", "data": {"items": [
  {"message_id": "om_fwd", "msg_type": "merge_forward", "create_time": "1760000100000", "chat_id": "oc_p2p_chat",
   "sender": {"id": "ou_3b8f1c2d4e5a6b7c8d9e0f1a2b3c4d5e", "id_type": "open_id", "sender_type": "user"},
   "body": {"content": "Merged and Forwarded Message"}},
  {"message_id": "om_c2", "msg_type": "image", "create_time": "1759990060000", "upper_message_id": "om_fwd",
   "sender": {"id": "ou_aa11bb22cc33dd44ee55ff6677889900", "id_type": "open_id", "sender_type": "user"},
   "body": {"content": "{\"image_key\":\"img_v3_02ab_6f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5g\"}"}},
  {"message_id": "om_c1", "msg_type": "text", "create_time": "1759990000000", "upper_message_id": "om_fwd",
   "sender": {"id": "ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", "id_type": "open_id", "sender_type": "user"},
   "body": {"content": "{\"text\":\"@_user_1 告警已恢复\"}"},
   "mentions": [{"key": "@_user_1", "id": "ou_aa11bb22cc33dd44ee55ff6677889900", "id_type": "open_id", "name": "李四"}]},
  {"message_id": "om_c3", "msg_type": "merge_forward", "create_time": "1759990120000", "upper_message_id": "om_fwd",
   "sender": {"id": "ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", "id_type": "open_id", "sender_type": "user"},
   "body": {"content": "{\"content\":\"Merged and Forwarded Message\"}"}},
  {"message_id": "om_c3a", "msg_type": "text", "create_time": "1759900000000", "upper_message_id": "om_c3",
   "sender": {"id": "cli_a5f0c3e2d1b0a9f8", "id_type": "app_id", "sender_type": "app"},
   "body": {"content": "{\"text\":\"[告警] CPU > 90%\"}"}}
]}}`
	var gets []string
	var asked [][]string
	e := &Expander{
		Get: func(_ context.Context, id string) ([]Item, error) {
			gets = append(gets, id)
			p, err := DecodeItems([]byte(raw))
			return p.Items, err
		},
		Names: func(_ context.Context, ids []string) (map[string]string, error) {
			asked = append(asked, ids)
			return map[string]string{"ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f": "王五"}, nil
		},
		BotName: "Helper",
	}
	got := expand(t, e, "om_fwd")
	wantText(t, got, `【合并转发,共 3 条】
[2025-10-09 14:06] 王五:@李四 告警已恢复
[2025-10-09 14:07] 李四:[图片 msg=om_c2]
[2025-10-09 14:08] 王五:
  【合并转发,共 1 条】
  [2025-10-08 13:06] Helper:[告警] CPU > 90%`)
	if !slices.Equal(gets, []string{"om_fwd"}) {
		t.Errorf("gets = %v, want only om_fwd", gets)
	}
	// 李四 is named by a mention in the answer; only 王五 is looked up.
	if len(asked) != 1 || !slices.Equal(asked[0], []string{"ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"}) {
		t.Errorf("names asked = %v", asked)
	}
}

// A nested forward that came without its children is fetched by its own
// id, once.
func TestExpandNestedSecondGet(t *testing.T) {
	f := newFake()
	f.names = map[string]string{"ou_zhang": "张三", "ou_zhao": "赵六"}
	f.answers["om_fwd"] = []Item{
		container("om_fwd"),
		userItem("om_outer", "om_fwd", "text", t0+8*minute, "ou_zhang", `{"text":"外层说明"}`),
		userItem("om_inner", "om_fwd", "merge_forward", t0+9*minute, "ou_zhang", `{"content":"Merged and Forwarded Message"}`),
	}
	inner := container("om_inner")
	inner.UpperMessageID = "om_fwd"
	day := int64(24*60) * minute
	f.answers["om_inner"] = []Item{
		inner,
		userItem("om_deep", "om_inner", "text", t0-day+8*60*minute+48*minute, "ou_zhao", `{"text":"内层原文"}`),
	}
	got := expand(t, f.expander(), "om_fwd")
	wantText(t, got, `【合并转发,共 2 条】
[2026-10-08 09:20] 张三:外层说明
[2026-10-08 09:21] 张三:
  【合并转发,共 1 条】
  [2026-10-07 18:00] 赵六:内层原文`)
	if f.gets["om_fwd"] != 1 || f.gets["om_inner"] != 1 || f.totalGets() != 2 {
		t.Errorf("gets = %v", f.gets)
	}
}

// chain builds forwards om_l1 ⊃ om_l2 ⊃ … ⊃ om_l<n>, each answered by its
// own GET only, the last holding one text.
func chain(f *fakeAPI, n int) {
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("om_l%d", i)
		c := container(id)
		if i > 1 {
			c.UpperMessageID = fmt.Sprintf("om_l%d", i-1)
		}
		kid := userItem(fmt.Sprintf("om_l%d", i+1), id, "merge_forward", t0+int64(i)*minute, "ou_1", MergeForwardText)
		if i == n {
			kid = userItem("om_leaf", id, "text", t0, "ou_1", `{"text":"最里面"}`)
		}
		f.answers[id] = []Item{c, kid}
	}
}

// Forwards are expanded three levels deep; a fourth is noted, not fetched.
func TestExpandDepthLimit(t *testing.T) {
	f := newFake()
	chain(f, 5)
	got := expand(t, f.expander(), "om_l1")
	wantText(t, got, `【合并转发,共 1 条】
[2026-10-08 09:13] ou_1:
  【合并转发,共 1 条】
  [2026-10-08 09:14] ou_1:
    【合并转发,共 1 条】
    [2026-10-08 09:15] ou_1:[合并转发](嵌套超过 3 层,未展开)`)
	if f.gets["om_l4"] != 0 || f.totalGets() != 3 {
		t.Errorf("gets = %v, want om_l1..om_l3 once each", f.gets)
	}
	// A shallower limit stops sooner; within it the chain ends in text.
	f = newFake()
	chain(f, 2)
	e := f.expander()
	e.MaxDepth = 2
	wantText(t, expand(t, e, "om_l1"), `【合并转发,共 1 条】
[2026-10-08 09:13] ou_1:
  【合并转发,共 1 条】
  [2026-10-08 09:12] ou_1:最里面`)
}

// A nested forward whose own GET fails or has no children stays a
// placeholder; the expansion goes on and each id is asked once.
func TestExpandNestedFailure(t *testing.T) {
	f := newFake()
	f.answers["om_fwd"] = []Item{
		container("om_fwd"),
		userItem("om_n1", "om_fwd", "merge_forward", t0, "ou_1", MergeForwardText),
		userItem("om_n2", "om_fwd", "merge_forward", t0+minute, "ou_1", MergeForwardText),
		userItem("om_t", "om_fwd", "text", t0+2*minute, "ou_1", `{"text":"好"}`),
	}
	f.errs["om_n1"] = &APIError{Code: 230027, Msg: "no permission"}
	f.answers["om_n2"] = []Item{container("om_n2")}
	logs := &logRecords{}
	e := f.expander()
	e.Logger = slog.New(logs)
	wantText(t, expand(t, e, "om_fwd"), `【合并转发,共 3 条】
[2026-10-08 09:12] ou_1:[合并转发]
[2026-10-08 09:13] ou_1:[合并转发]
[2026-10-08 09:14] ou_1:好`)
	if f.gets["om_n1"] != 1 || f.gets["om_n2"] != 1 {
		t.Errorf("gets = %v", f.gets)
	}
	if len(logs.records) != 1 || attrs(logs.records[0])["code"].Int64() != 230027 || attrs(logs.records[0])["message_id"].String() != "om_n1" {
		t.Errorf("logs = %v", logs.records)
	}
}

// An answer whose upper_message_id links loop back is cut where the loop
// closes.
func TestExpandCycle(t *testing.T) {
	f := newFake()
	root := container("om_r")
	root.UpperMessageID = "om_a"
	f.answers["om_r"] = []Item{
		root,
		userItem("om_a", "om_r", "merge_forward", t0, "ou_1", MergeForwardText),
	}
	wantText(t, expand(t, f.expander(), "om_r"), `【合并转发,共 1 条】
[2026-10-08 09:12] ou_1:
  【合并转发,共 1 条】
  [2025-10-09 16:55] ou_fwd:[合并转发]`)
	if f.totalGets() != 1 {
		t.Errorf("gets = %v", f.gets)
	}
}

// Recalled children read (已撤回); their content is not read.
func TestExpandDeleted(t *testing.T) {
	f := newFake()
	gone := userItem("om_gone", "om_fwd", "text", t0, "ou_1", `{"text":"秘密"}`)
	gone.Deleted = true
	goneFwd := userItem("om_gone_fwd", "om_fwd", "merge_forward", t0+minute, "ou_1", MergeForwardText)
	goneFwd.Deleted = true
	f.answers["om_fwd"] = []Item{container("om_fwd"), gone, goneFwd}
	got := expand(t, f.expander(), "om_fwd")
	wantText(t, got, `【合并转发,共 2 条】
[2026-10-08 09:12] ou_1:(已撤回)
[2026-10-08 09:13] ou_1:(已撤回)`)
	if f.gets["om_gone_fwd"] != 0 {
		t.Error("a recalled forward was fetched")
	}
}

// Failures return an error and nothing else, and log one warning with
// the id and the Feishu code.
func TestExpandFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer []Item
		err    error
		code   int64
	}{
		{"230027 permission", nil, &APIError{Code: 230027, Msg: "Lack of necessary permissions"}, 230027},
		{"230002 bot not in chat", nil, &APIError{Code: 230002, Msg: "Bot is not in the chat"}, 230002},
		{"230110 deleted", nil, fmt.Errorf("get: %w", &APIError{Code: 230110, Msg: "deleted"}), 230110},
		{"230050 invisible", nil, &APIError{Code: 230050, Msg: "invisible"}, 230050},
		{"network", nil, errors.New("dial tcp: connection refused"), 0},
		{"only the container", []Item{container("om_fwd")}, nil, 0},
		{"empty answer", nil, nil, 0},
		{"children of another forward", []Item{container("om_fwd"), userItem("om_x", "om_other", "text", t0, "ou_1", `{"text":"x"}`)}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.answers["om_fwd"] = tc.answer
			if tc.err != nil {
				f.errs["om_fwd"] = tc.err
			}
			logs := &logRecords{}
			e := f.expander()
			e.Logger = slog.New(logs)
			got, err := e.Expand(t.Context(), "om_fwd")
			if err == nil || got != "" {
				t.Fatalf("Expand = %q, %v; want an error and no text", got, err)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("err = %v, does not wrap %v", err, tc.err)
			}
			if tc.err == nil && !errors.Is(err, ErrNoChildren) {
				t.Errorf("err = %v, want ErrNoChildren", err)
			}
			if len(logs.records) != 1 {
				t.Fatalf("logged %d records, want one", len(logs.records))
			}
			r := logs.records[0]
			a := attrs(r)
			if r.Level != slog.LevelWarn || a["message_id"].String() != "om_fwd" || a["code"].Int64() != tc.code {
				t.Errorf("record = %v %v", r.Level, a)
			}
			if f.totalGets() != 1 {
				t.Errorf("gets = %v", f.gets)
			}
		})
	}
	if _, err := (&Expander{}).Expand(t.Context(), "om_fwd"); err == nil {
		t.Error("an Expander without Get succeeded")
	}
	if _, err := newFake().expander().Expand(t.Context(), ""); err == nil {
		t.Error("an empty id succeeded")
	}
}

// Senders are named in batches of at most ten ids, each asked once; apps
// take the bot's name, anonymous senders 匿名, the unresolved their id.
func TestExpandNames(t *testing.T) {
	f := newFake()
	items := []Item{container("om_fwd")}
	inner := userItem("om_in", "om_fwd", "merge_forward", t0+100*minute, "ou_u0", MergeForwardText)
	items = append(items, inner)
	for i := range 30 {
		parent := "om_fwd"
		if i%2 == 1 {
			parent = "om_in"
		}
		// 23 users, some sending more than once.
		u := fmt.Sprintf("ou_u%d", i%23)
		items = append(items, userItem(fmt.Sprintf("om_%d", i), parent, "text", t0+int64(i)*minute, u, `{"text":"x"}`))
		if i != 7 {
			f.names[u] = fmt.Sprintf("用户%d", i%23)
		}
	}
	app := userItem("om_app", "om_fwd", "text", t0+200*minute, "cli_x", `{"text":"机器人说"}`)
	app.Sender = Sender{ID: "cli_x", IDType: "app_id", SenderType: "app"}
	anon := userItem("om_anon", "om_fwd", "text", t0+201*minute, "", `{"text":"匿名说"}`)
	anon.Sender = Sender{SenderType: "anonymous"}
	odd := userItem("om_odd", "om_fwd", "text", t0+202*minute, "ou_odd", `{"text":"?"}`)
	odd.Sender.SenderType = "unknown"
	items = append(items, app, anon, odd)
	f.answers["om_fwd"] = items
	got := expand(t, f.expander(), "om_fwd")

	seen := map[string]int{}
	for _, call := range f.nameCalls {
		if len(call) == 0 || len(call) > 10 {
			t.Errorf("a Names call with %d ids", len(call))
		}
		for _, id := range call {
			seen[id]++
		}
	}
	if len(seen) != 23 {
		t.Errorf("asked for %d ids, want the 23 users", len(seen))
	}
	for id, n := range seen {
		if n != 1 || !strings.HasPrefix(id, "ou_u") {
			t.Errorf("%s asked %d times", id, n)
		}
	}
	for _, want := range []string{"] 用户1:x", "] 用户0:\n", "] ou_u7:x", "] Helper:机器人说", "] 匿名:匿名说", "] ou_odd:?"} {
		if !strings.Contains(got, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, got)
		}
	}

	// Without a bot name an app reads as its id; a Names error leaves ids.
	f.nameCalls = nil
	f.namesErr = errors.New("rate limited")
	e := f.expander()
	e.BotName = ""
	got = expand(t, e, "om_fwd")
	for _, want := range []string{"] cli_x:机器人说", "] ou_u1:x"} {
		if !strings.Contains(got, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, got)
		}
	}
	if len(f.nameCalls) != 3 {
		t.Errorf("%d Names calls, want 3 batches of 23 ids", len(f.nameCalls))
	}
	// No Names at all: ids.
	e.Names = nil
	if got := expand(t, e, "om_fwd"); !strings.Contains(got, "] ou_u1:x") {
		t.Errorf("without Names:\n%s", got)
	}
}

// Past 100 children the rest are counted, nested ones included.
func TestExpandLineLimit(t *testing.T) {
	f := newFake()
	items := []Item{container("om_fwd")}
	for i := range 150 {
		items = append(items, userItem(fmt.Sprintf("om_%03d", i), "om_fwd", "text", t0+int64(i)*minute, "ou_1", fmt.Sprintf(`{"text":"第%d条"}`, i)))
	}
	f.answers["om_fwd"] = items
	got := expand(t, f.expander(), "om_fwd")
	lines := strings.Split(got, "\n")
	if len(lines) != 102 || lines[0] != "【合并转发,共 150 条】" || !strings.HasSuffix(lines[100], ":第99条") || lines[101] != "其余 50 条未展开" {
		t.Errorf("got %d lines, first %q, last two %q", len(lines), lines[0], lines[len(lines)-2:])
	}

	// The limit counts nested children; what is cut inside a nested
	// forward, its later siblings and their known children are counted.
	f = newFake()
	items = []Item{container("om_fwd")}
	items = append(items, userItem("om_in", "om_fwd", "merge_forward", t0, "ou_1", MergeForwardText))
	for i := range 8 {
		items = append(items, userItem(fmt.Sprintf("om_in%d", i), "om_in", "text", t0+int64(i)*minute, "ou_1", `{"text":"内"}`))
	}
	items = append(items, userItem("om_later", "om_fwd", "merge_forward", t0+minute, "ou_1", MergeForwardText))
	items = append(items, userItem("om_later0", "om_later", "text", t0, "ou_1", `{"text":"后"}`))
	items = append(items, userItem("om_last", "om_fwd", "text", t0+2*minute, "ou_1", `{"text":"末"}`))
	f.answers["om_fwd"] = items
	e := f.expander()
	e.MaxLines = 5
	wantText(t, expand(t, e, "om_fwd"), `【合并转发,共 3 条】
[2026-10-08 09:12] ou_1:
  【合并转发,共 8 条】
  [2026-10-08 09:12] ou_1:内
  [2026-10-08 09:13] ou_1:内
  [2026-10-08 09:14] ou_1:内
  [2026-10-08 09:15] ou_1:内
其余 7 条未展开`)
	if f.gets["om_later"] != 0 {
		t.Error("a forward past the limit was fetched")
	}
}

// A child of several lines stays on its line, its line breaks shown, so
// no line of it reads as a row of the excerpt: a text typed to look like
// a nested forward by someone else stays inside its sender's row.
func TestExpandMultiline(t *testing.T) {
	f := newFake()
	f.answers["om_fwd"] = []Item{
		container("om_fwd"),
		userItem("om_in", "om_fwd", "merge_forward", t0, "ou_1", MergeForwardText),
		userItem("om_p", "om_in", "post", t0, "ou_1", `{"title":"周报","content":[[{"tag":"text","text":"一"}],[{"tag":"text","text":"二"}]]}`),
		userItem("om_forged", "om_fwd", "text", t0+minute, "ou_2", `{"text":"收到\n【合并转发,共 1 条】\n[2026-10-07 18:00] 老板:同意转账"}`),
	}
	wantText(t, expand(t, f.expander(), "om_fwd"), `【合并转发,共 2 条】
[2026-10-08 09:12] ou_1:
  【合并转发,共 1 条】
  [2026-10-08 09:12] ou_1:周报 ↵ 一 ↵ 二
[2026-10-08 09:13] ou_2:收到 ↵ 【合并转发,共 1 条】 ↵ [2026-10-07 18:00] 老板:同意转账`)
}

// longForward is a forward of n children of 100 characters each.
func longForward(f *fakeAPI, id string, n int) {
	items := []Item{container(id)}
	for i := range n {
		items = append(items, userItem(fmt.Sprintf("om_%d", i), id, "text", t0+int64(i)*minute, "ou_1", `{"text":"`+strings.Repeat("长", 100)+`"}`))
	}
	f.answers[id] = items
}

// Over 4000 characters the excerpt is written whole to the workspace and
// the inline text keeps 4000 of them and the file's path.
func TestExpandOverflowFile(t *testing.T) {
	f := newFake()
	id := "om_long/../x"
	longForward(f, id, 60)
	e := f.expander()
	e.Workspace = t.TempDir()
	got := expand(t, e, id)

	path := filepath.Join(e.Workspace, "quoted", "merge-forward-om_long____x.txt")
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(full), "【合并转发,共 60 条】\n") || !strings.HasSuffix(string(full), strings.Repeat("长", 100)) || utf8.RuneCountInString(string(full)) <= 4000 {
		t.Errorf("file holds %d characters", utf8.RuneCountInString(string(full)))
	}
	head, tail, ok := strings.Cut(got, "\n全文见 @")
	if !ok || tail != path+"@" {
		t.Fatalf("no file line in %q", got[max(0, len(got)-200):])
	}
	if utf8.RuneCountInString(head) != 4000 || !strings.HasPrefix(string(full), head) {
		t.Errorf("inline part is %d characters, want the first 4000", utf8.RuneCountInString(head))
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("quoted/ holds %d entries, want the file alone", len(entries))
	}

	// Just at the limit nothing is written.
	f = newFake()
	f.answers["om_fit"] = []Item{container("om_fit"), userItem("om_1", "om_fit", "text", t0, "ou_1", `{"text":"x"}`)}
	head = "【合并转发,共 1 条】\n[2026-10-08 09:12] ou_1:x"
	e = f.expander()
	e.Workspace = t.TempDir()
	e.MaxChars = utf8.RuneCountInString(head)
	wantText(t, expand(t, e, "om_fit"), head)
	if _, err := os.Stat(filepath.Join(e.Workspace, "quoted")); !os.IsNotExist(err) {
		t.Errorf("quoted/ made for a short excerpt: %v", err)
	}
}

// When the file cannot be written, or there is no workspace, the excerpt
// is only truncated.
func TestExpandOverflowTruncates(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{notDir, ""} {
		f := newFake()
		longForward(f, "om_long", 60)
		logs := &logRecords{}
		e := f.expander()
		e.Workspace = ws
		e.Logger = slog.New(logs)
		got := expand(t, e, "om_long")
		head, ok := strings.CutSuffix(got, "\n(其余已截断)")
		if !ok || utf8.RuneCountInString(head) != 4000 {
			t.Errorf("workspace %q: %d characters, suffix %q", ws, utf8.RuneCountInString(head), got[max(0, len(got)-30):])
		}
		if wantLogs := map[bool]int{true: 0, false: 1}[ws == ""]; len(logs.records) != wantLogs {
			t.Errorf("workspace %q: %d log records", ws, len(logs.records))
		}
	}
}

func TestFileSafe(t *testing.T) {
	for in, want := range map[string]string{
		"om_dc13264520392913993dd051dba21dcf": "om_dc13264520392913993dd051dba21dcf",
		"../../etc/passwd":                    "______etc_passwd",
		"":                                    "_",
		"om 合并":                               "om_______",
		strings.Repeat("a", 300):              strings.Repeat("a", 128),
	} {
		if got := fileSafe(in); got != want {
			t.Errorf("fileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// Expand may run concurrently on one Expander.
func TestExpandConcurrent(t *testing.T) {
	f := newFake()
	longForward(f, "om_a", 3)
	longForward(f, "om_b", 4)
	e := f.expander()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id := []string{"om_a", "om_b"}[i%2]
			if _, err := e.Expand(t.Context(), id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
