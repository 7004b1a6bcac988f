package larkmsg

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// forward100 is one GET answer of a forward holding 100 children over
// three levels: 34 messages and 2 forwards at the top, each of those 25
// messages and a forward, each of those 6 messages.
func forward100() []Item {
	items := []Item{container("om_root")}
	n := 0
	kinds := []struct{ typ, content string }{
		{"text", `{"text":"@_user_1 告警已恢复,请看一下 https://example.com/dash"}`},
		{"post", `{"title":"周报","content":[[{"tag":"text","text":"进度 "},{"tag":"at","user_id":"@_user_1"}],[{"tag":"img","image_key":"img_v3_x"}]]}`},
		{"image", `{"image_key":"img_v3_x"}`},
		{"interactive", `{"schema":"2.0","header":{"title":{"tag":"plain_text","content":"构建结果"}},"body":{"elements":[{"tag":"markdown","content":"**失败** <at id=ou_u1></at>"}]}}`},
		{"file", `{"file_key":"file_x","file_name":"报告.pdf"}`},
	}
	add := func(parent string, leaves int) {
		for range leaves {
			k := kinds[n%len(kinds)]
			it := userItem(fmt.Sprintf("om_%d", n), parent, k.typ, t0+int64(n)*minute, fmt.Sprintf("ou_u%d", n%12), k.content)
			it.Mentions = []Mention{{Key: "@_user_1", ID: "ou_u1", IDType: "open_id", Name: "李四"}}
			items = append(items, it)
			n++
		}
	}
	nested := func(parent, id string) {
		items = append(items, userItem(id, parent, "merge_forward", t0+int64(n)*minute, "ou_u0", MergeForwardText))
		n++
	}
	add("om_root", 34)
	for a := range 2 {
		mid := fmt.Sprintf("om_mid%d", a)
		nested("om_root", mid)
		add(mid, 25)
		inner := fmt.Sprintf("om_inner%d", a)
		nested(mid, inner)
		add(inner, 6)
	}
	return items
}

func BenchmarkExpand100(b *testing.B) {
	answer := forward100()
	names := map[string]string{}
	for i := range 12 {
		names[fmt.Sprintf("ou_u%d", i)] = fmt.Sprintf("用户%d", i)
	}
	gets := 0
	e := &Expander{
		Get: func(context.Context, string) ([]Item, error) {
			gets++
			return answer, nil
		},
		Names: func(_ context.Context, ids []string) (map[string]string, error) {
			return names, nil
		},
		BotName: "Helper",
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Expand(ctx, "om_root"); err != nil {
			b.Fatal(err)
		}
	}
	if gets != b.N {
		b.Fatalf("%d GETs for %d expansions", gets, b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/child")
}

// The benchmark's forward is one answer of 100 children on three levels,
// all rendered (and past 4000 characters, so the benchmark truncates).
func TestForward100(t *testing.T) {
	f := newFake()
	f.answers["om_root"] = forward100()
	e := f.expander()
	e.MaxChars = 1 << 20
	got := expand(t, e, "om_root")
	if f.totalGets() != 1 {
		t.Errorf("gets = %v", f.gets)
	}
	if n := len(regexp.MustCompile(`(?m)^ *\[\d{4}-\d\d-\d\d \d\d:\d\d\] `).FindAllString(got, -1)); n != 100 {
		t.Errorf("%d children rendered, want 100", n)
	}
	if !strings.Contains(got, "\n    【合并转发,共 6 条】\n") || strings.Contains(got, "未展开") {
		t.Errorf("excerpt:\n%s", got)
	}
}
