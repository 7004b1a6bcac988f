package larkmsg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/prompt"
)

// Defaults of the Expander's limits (the spec's).
const (
	DefaultMaxDepth = 3
	DefaultMaxLines = 100
	DefaultMaxChars = 4000
)

// namesBatch is the most ids one Names call is given: the basic_batch
// contact API takes 1 to 10.
const namesBatch = 10

// ErrNoChildren is returned by Expand when the answer holds no child of
// the forward (only its container, or nothing).
var ErrNoChildren = errors.New("larkmsg: merge forward answer has no children")

// Expander expands merged forwards into excerpts. The zero values of its
// limits are the defaults. It holds no state between calls: one Expander
// may expand many forwards at once.
type Expander struct {
	// Get fetches a message by id: the items of GET
	// /open-apis/im/v1/messages/:id (read with
	// card_msg_content_type=user_card_content), which for a merged forward
	// are its container and its descendants. A Feishu error should be an
	// *APIError so its code is logged. Required.
	Get func(ctx context.Context, id string) ([]Item, error)
	// Names resolves users' open_ids to names; it is given at most 10 ids a
	// call. Ids it leaves out read as the open_id; an error is logged and
	// the expansion goes on. Optional.
	Names func(ctx context.Context, openIDs []string) (map[string]string, error)
	// BotName is how messages sent by apps are attributed; empty uses the
	// app's id.
	BotName string
	// Location is the time zone of the times shown; nil is Asia/Shanghai.
	Location *time.Location
	// MaxDepth is how many levels of forwards are expanded, the outer one
	// included (3); deeper ones are noted as not expanded.
	MaxDepth int
	// MaxLines is how many children are rendered in all, nested ones
	// included (100); a last line counts those left out.
	MaxLines int
	// MaxChars is how many characters the excerpt keeps inline (4000).
	MaxChars int
	// Workspace is the chat's workspace directory: an excerpt longer than
	// MaxChars is written whole under quoted/ there and the inline text
	// points at it. Empty only truncates.
	Workspace string
	// Logger receives the failures; nil discards them.
	Logger *slog.Logger
}

// Expand fetches the merged forward id and renders it as an excerpt:
//
//	【合并转发,共 3 条】
//	[2026-10-08 09:12] 张三:大家好
//	[2026-10-08 09:13] 李四:[图片 msg=om_child_image]
//	[2026-10-08 09:14] 王五:
//	  【合并转发,共 1 条】
//	  [2026-10-07 18:00] 赵六:内层原文
//
// Children are in creation order, recalled ones read (已撤回), and a
// nested forward is expanded below its line, indented, from the same
// answer when it came with its children or else from a GET of its own.
// A child's text that runs over several lines keeps its further lines
// indented below it.
//
// On failure (the GET failed, or its answer holds no child) Expand logs
// one warning with the id and Feishu code and returns an error; the caller
// keeps the forward's placeholder. Error text never goes into the excerpt.
func (e *Expander) Expand(ctx context.Context, id string) (string, error) {
	x := e.newExpansion(ctx)
	text, err := x.run(id)
	if err != nil {
		code := 0
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			code = apiErr.Code
		}
		x.log.Warn("feishu: merge forward not expanded", "message_id", id, "code", code, "err", err)
		return "", fmt.Errorf("larkmsg: expand merge forward %s: %w", id, err)
	}
	return text, nil
}

// child is a fetched message below a forward, with its time parsed.
type child struct {
	item *Item
	ms   int64
}

// row is one line of the excerpt before names are known: a forward's
// header (item nil) or a child's line.
type row struct {
	indent int
	count  int // a header's count of children
	item   *Item
	body   string
}

// expansion is the state of one Expand call.
type expansion struct {
	e        *Expander
	ctx      context.Context
	log      *slog.Logger
	loc      *time.Location
	maxDepth int
	maxLines int
	maxChars int

	items   map[string]*Item
	kids    map[string][]child
	sorted  map[string]bool
	fetched map[string]bool
	onPath  map[string]bool

	rows     []row
	rendered int
	skipped  int
}

func (e *Expander) newExpansion(ctx context.Context) *expansion {
	x := &expansion{
		e: e, ctx: ctx, log: e.Logger, loc: e.Location,
		maxDepth: orDefault(e.MaxDepth, DefaultMaxDepth),
		maxLines: orDefault(e.MaxLines, DefaultMaxLines),
		maxChars: orDefault(e.MaxChars, DefaultMaxChars),
		items:    map[string]*Item{},
		kids:     map[string][]child{},
		sorted:   map[string]bool{},
		fetched:  map[string]bool{},
		onPath:   map[string]bool{},
	}
	if x.log == nil {
		x.log = slog.New(slog.DiscardHandler)
	}
	if x.loc == nil {
		x.loc = location()
	}
	return x
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func (x *expansion) run(id string) (string, error) {
	if x.e.Get == nil {
		return "", errors.New("larkmsg: Expander.Get is nil")
	}
	if id == "" {
		return "", errors.New("larkmsg: empty message id")
	}
	if err := x.fetch(id); err != nil {
		return "", err
	}
	if len(x.kids[id]) == 0 {
		return "", ErrNoChildren
	}
	x.walk(id, 1, 0)
	names := x.resolveNames()
	return x.finish(id, x.format(names)), nil
}

// fetch GETs id once per expansion and files the answer's items under
// their parents. The first copy of an item wins.
func (x *expansion) fetch(id string) error {
	if x.fetched[id] {
		return nil
	}
	x.fetched[id] = true
	items, err := x.e.Get(x.ctx, id)
	if err != nil {
		return err
	}
	for i := range items {
		it := &items[i]
		if it.MessageID != "" {
			if _, dup := x.items[it.MessageID]; dup {
				continue
			}
			x.items[it.MessageID] = it
		}
		if up := it.UpperMessageID; up != "" && up != it.MessageID {
			x.kids[up] = append(x.kids[up], child{item: it, ms: parseMillis(it.CreateTime)})
			x.sorted[up] = false
		}
	}
	return nil
}

// parseMillis reads create_time; what cannot be read sorts last.
func parseMillis(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 1<<63 - 1
	}
	return n
}

// children returns parent's children in creation order (stable).
func (x *expansion) children(parent string) []child {
	kids := x.kids[parent]
	if !x.sorted[parent] {
		slices.SortStableFunc(kids, func(a, b child) int { return cmp.Compare(a.ms, b.ms) })
		x.sorted[parent] = true
	}
	return kids
}

// walk lays out the rows of forward parent at level (the outer forward
// is level 1), fetching nested forwards that came without children.
func (x *expansion) walk(parent string, level, indent int) {
	kids := x.children(parent)
	x.rows = append(x.rows, row{indent: indent, count: len(kids)})
	x.onPath[parent] = true
	defer delete(x.onPath, parent)
	for _, k := range kids {
		if x.rendered >= x.maxLines {
			x.skipped += x.count(k, level)
			continue
		}
		x.rendered++
		it := k.item
		r := row{indent: indent, item: it}
		switch {
		case it.Deleted:
			r.body = "(已撤回)"
		case it.MsgType != "merge_forward":
			r.body = Render(it.MsgType, it.Body.Content, it.MessageID, it.Mentions)
		case level >= x.maxDepth:
			r.body = fmt.Sprintf("[合并转发](嵌套超过 %d 层,未展开)", x.maxDepth)
		case it.MessageID == "" || x.onPath[it.MessageID]:
			r.body = "[合并转发]"
		default:
			if len(x.kids[it.MessageID]) == 0 && !x.fetched[it.MessageID] {
				if err := x.fetch(it.MessageID); err != nil {
					x.logNested(it.MessageID, err)
				}
			}
			if len(x.kids[it.MessageID]) == 0 {
				r.body = "[合并转发]"
				break
			}
			x.rows = append(x.rows, r)
			x.walk(it.MessageID, level+1, indent+1)
			continue
		}
		x.rows = append(x.rows, r)
	}
}

func (x *expansion) logNested(id string, err error) {
	code := 0
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		code = apiErr.Code
	}
	x.log.Warn("feishu: nested merge forward not expanded", "message_id", id, "code", code, "err", err)
}

// count is how many lines child k would have taken at level: itself and
// the known children of a forward that would have been expanded.
func (x *expansion) count(k child, level int) int {
	it := k.item
	if it.Deleted || it.MsgType != "merge_forward" || level >= x.maxDepth || it.MessageID == "" || x.onPath[it.MessageID] {
		return 1
	}
	x.onPath[it.MessageID] = true
	defer delete(x.onPath, it.MessageID)
	n := 1
	for _, kk := range x.kids[it.MessageID] {
		n += x.count(kk, level+1)
	}
	return n
}

// resolveNames names the users who sent the rendered children: first from
// the mentions in the answers, then through Names, at most namesBatch ids
// a call, each id asked once.
func (x *expansion) resolveNames() map[string]string {
	known := map[string]string{}
	for _, it := range x.items {
		for _, m := range it.Mentions {
			if name := strings.TrimSpace(m.Name); name != "" && isOpenID(m) {
				known[m.ID] = name
			}
		}
	}
	names := map[string]string{}
	var ask []string
	for _, r := range x.rows {
		if r.item == nil || r.item.Sender.SenderType != "user" || r.item.Sender.ID == "" {
			continue
		}
		id := r.item.Sender.ID
		if _, done := names[id]; done {
			continue
		}
		if name, ok := known[id]; ok {
			names[id] = name
			continue
		}
		names[id] = ""
		ask = append(ask, id)
	}
	if x.e.Names == nil {
		return names
	}
	for batch := range slices.Chunk(ask, namesBatch) {
		got, err := x.e.Names(x.ctx, batch)
		if err != nil {
			x.log.Warn("feishu: sender names not resolved", "ids", len(batch), "err", err)
			continue
		}
		for _, id := range batch {
			names[id] = strings.TrimSpace(got[id])
		}
	}
	return names
}

// senderName is how a child's sender reads.
func (x *expansion) senderName(s Sender, names map[string]string) string {
	var name string
	switch s.SenderType {
	case "user":
		name = names[s.ID]
	case "app":
		name = x.e.BotName
	case "anonymous":
		name = "匿名"
	}
	if name == "" {
		name = s.ID
	}
	if name == "" {
		name = "未知"
	}
	return strings.Join(strings.Fields(name), " ")
}

// format writes the rows, two spaces of indent a level, each child on one
// line.
func (x *expansion) format(names map[string]string) string {
	var sb strings.Builder
	for _, r := range x.rows {
		pad := strings.Repeat("  ", r.indent)
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(pad)
		if r.item == nil {
			fmt.Fprintf(&sb, "【合并转发,共 %d 条】", r.count)
			continue
		}
		sb.WriteString("[")
		sb.WriteString(x.stamp(r.item.CreateTime))
		sb.WriteString("] ")
		sb.WriteString(x.senderName(r.item.Sender, names))
		sb.WriteString(":")
		// One line a child: a child's own lines, indented, would read as
		// the rows of a nested forward (of a sender the text names).
		sb.WriteString(prompt.OneLine(r.body))
	}
	if x.skipped > 0 {
		fmt.Fprintf(&sb, "\n其余 %d 条未展开", x.skipped)
	}
	return sb.String()
}

// stamp formats create_time (ms) as YYYY-MM-DD HH:mm.
func (x *expansion) stamp(createTime string) string {
	ms, err := strconv.ParseInt(strings.TrimSpace(createTime), 10, 64)
	if err != nil {
		return "时间未知"
	}
	return time.UnixMilli(ms).In(x.loc).Format(stampLayout)
}

// finish keeps the excerpt inline when it fits in maxChars; else it
// writes it whole to the workspace and keeps the first maxChars
// characters and a line pointing at the file, or only those characters
// and a note when it cannot be written.
func (x *expansion) finish(id, text string) string {
	head, cut := cutRunes(text, x.maxChars)
	if !cut {
		return text
	}
	if x.e.Workspace != "" {
		path, err := writeFull(x.e.Workspace, id, text)
		if err == nil {
			return head + "\n全文见 @" + path + "@"
		}
		x.log.Warn("feishu: merge forward excerpt not written", "message_id", id, "err", err)
	}
	return head + "\n(其余已截断)"
}

// cutRunes returns the first n runes of s and whether s was longer.
func cutRunes(s string, n int) (string, bool) {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}

// writeFull writes text to <workspace>/quoted/merge-forward-<id>.txt
// through a temporary file renamed into place, and returns the absolute
// path.
func writeFull(workspace, id, text string) (string, error) {
	dir, err := filepath.Abs(filepath.Join(workspace, "quoted"))
	if err != nil {
		return "", fmt.Errorf("larkmsg: workspace path: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("larkmsg: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "merge-forward-"+fileSafe(id)+".txt")
	tmp, err := os.CreateTemp(dir, ".merge-forward-*.tmp")
	if err != nil {
		return "", fmt.Errorf("larkmsg: write %s: %w", path, err)
	}
	_, werr := tmp.WriteString(text)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("larkmsg: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("larkmsg: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("larkmsg: write %s: %w", path, err)
	}
	return path, nil
}

// fileSafe maps a message id to a file name part: letters, digits, '-'
// and '_' kept, anything else '_', at most 128 bytes.
func fileSafe(id string) string {
	b := []byte(id)
	if len(b) > 128 {
		b = b[:128]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
