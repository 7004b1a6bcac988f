package feishusim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DegradedCard is body.content of a sent card read without
// card_msg_content_type: what the platform degrades a JSON 2.0 card to.
const DegradedCard = `{"title":"","elements":[[{"tag":"text","text":"[图片]请升级至最新版本客户端，以查看内容"}]]}`

// Fixed bodies the platform serves for merge_forward containers and
// recalled messages.
const (
	mergeForwardText = "Merged and Forwarded Message"
	recalledText     = "This message was recalled"
)

// Send limits: content bytes per msg_type, uuid length, the history
// page size, and the uuid idempotency window.
const (
	maxTextContent = 150 << 10
	maxRichContent = 30 << 10
	maxUUID        = 50
	maxPageSize    = 50
	defPageSize    = 20
	uuidWindow     = time.Hour
	sendWindow     = time.Second
	sendsPerWindow = 5
)

// apiMessage is one item of a GET or list answer, and the data of a
// create or reply answer.
type apiMessage struct {
	MessageID      string       `json:"message_id"`
	RootID         string       `json:"root_id,omitempty"`
	ParentID       string       `json:"parent_id,omitempty"`
	ThreadID       string       `json:"thread_id,omitempty"`
	MsgType        string       `json:"msg_type"`
	CreateTime     string       `json:"create_time"`
	UpdateTime     string       `json:"update_time"`
	Deleted        bool         `json:"deleted"`
	Updated        bool         `json:"updated"`
	ChatID         string       `json:"chat_id,omitempty"`
	Sender         apiSender    `json:"sender"`
	Body           apiBody      `json:"body"`
	Mentions       []apiMention `json:"mentions,omitempty"`
	UpperMessageID string       `json:"upper_message_id,omitempty"`
}

type apiSender struct {
	ID         string `json:"id"`
	IDType     string `json:"id_type"`
	SenderType string `json:"sender_type"`
	TenantKey  string `json:"tenant_key"`
}

type apiBody struct {
	Content string `json:"content"`
}

type apiMention struct {
	Key       string `json:"key"`
	ID        string `json:"id"`
	IDType    string `json:"id_type"`
	Name      string `json:"name"`
	TenantKey string `json:"tenant_key"`
}

// view says how items are rendered for one request.
type view struct {
	cardUser bool   // card_msg_content_type asks for the sender's card
	idType   string // user_id_type
	list     bool   // a history list item
}

func readView(q *request) (view, *answer) {
	idType, a := userIDType(q)
	if a != nil {
		return view{}, a
	}
	v := view{idType: idType}
	switch c := q.query("card_msg_content_type"); c {
	case "":
	case "user_card_content", "raw_card_content":
		v.cardUser = true
	default:
		return view{}, invalidField("card_msg_content_type: unknown %q", c)
	}
	return v, nil
}

func (s *Sim) item(r *record, v view) apiMessage {
	m := r.m
	it := apiMessage{
		MessageID: m.ID, RootID: m.RootID, ParentID: m.ParentID, ThreadID: m.ThreadID,
		MsgType: m.MsgType, CreateTime: ms(m.CreateTime), UpdateTime: ms(m.UpdateTime),
		Deleted: m.Deleted, Updated: m.Updated, ChatID: m.ChatID,
		UpperMessageID: m.UpperMessageID,
	}
	it.Sender = apiSender{ID: convertID(m.SenderID, v.idType), IDType: v.idType, SenderType: m.SenderType, TenantKey: s.opts.TenantKey}
	if isAppID(m.SenderID) {
		it.Sender.ID, it.Sender.IDType = m.SenderID, "app_id"
	}
	switch {
	case m.Deleted:
		it.Body.Content = recalledText
	case m.MsgType == "merge_forward" && m.Content == "":
		// The outer container's content is the bare sentence; a nested
		// one's is JSON. Readers have to accept both.
		it.Body.Content = mergeForwardText
		if m.UpperMessageID != "" && !v.list {
			it.Body.Content = `{"content":"` + mergeForwardText + `"}`
		}
	case m.MsgType == "interactive" && v.cardUser && m.CardContent != "":
		it.Body.Content = m.CardContent
	default:
		it.Body.Content = m.Content
	}
	for _, mn := range m.Mentions {
		id, idType := convertID(mn.ID, v.idType), v.idType
		if isAppID(mn.ID) {
			id, idType = mn.ID, "app_id"
		}
		it.Mentions = append(it.Mentions, apiMention{Key: mn.Key, ID: id, IDType: idType, Name: mn.Name, TenantKey: s.opts.TenantKey})
	}
	return it
}

// getMessage serves GET /open-apis/im/v1/messages/:message_id. For a
// merge_forward the items are the container followed by all its
// descendants in one flat list (each pointing at its direct parent
// through upper_message_id), in a fixed order that is not create_time
// order; OneLevel limits the list to direct children.
func (s *Sim) getMessage(q *request) *answer {
	v, a := readView(q)
	if a != nil {
		return a
	}
	r, known := s.msgs[q.params[0]]
	if !known {
		return failCode(CodeDeleted)
	}
	items := []apiMessage{s.item(r, v)}
	if r.m.MsgType == "merge_forward" {
		var desc []*record
		s.descendants(r, s.oneLevel[r.m.ID], &desc, map[string]bool{r.m.ID: true})
		for _, d := range scramble(desc, r.m.ID) {
			items = append(items, s.item(d, v))
		}
	}
	return ok(struct {
		Items []apiMessage `json:"items"`
	}{items})
}

func (s *Sim) descendants(r *record, oneLevel bool, out *[]*record, seen map[string]bool) {
	for _, id := range r.children {
		c, known := s.msgs[id]
		if !known || seen[id] {
			continue
		}
		seen[id] = true
		*out = append(*out, c)
		if !oneLevel {
			s.descendants(c, false, out, seen)
		}
	}
}

// scramble orders a container's descendants by a hash of their ids:
// fixed for a given set, unrelated to create_time. When the container's
// direct children happen to come out in create_time order the list is
// reversed, so a reader that forgets to sort siblings always notices.
func scramble(rs []*record, container string) []*record {
	key := func(r *record) uint64 {
		h := fnv.New64a()
		h.Write([]byte(r.m.ID))
		return h.Sum64()
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b *record) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	var direct []time.Time
	for _, r := range out {
		if r.m.UpperMessageID == container {
			direct = append(direct, r.m.CreateTime)
		}
	}
	if len(direct) > 1 && slices.IsSortedFunc(direct, time.Time.Compare) {
		slices.Reverse(out)
	}
	return out
}

// listMessages serves GET /open-apis/im/v1/messages, a chat's (or a
// thread's) history. Paging is by cursor, so messages added between
// pages neither repeat nor go missing.
func (s *Sim) listMessages(q *request) *answer {
	v, a := readView(q)
	if a != nil {
		return a
	}
	v.list = true
	containerType, containerID := q.query("container_id_type"), q.query("container_id")
	if containerID == "" {
		return invalidField("container_id: required")
	}
	desc := false
	switch st := q.query("sort_type"); st {
	case "", "ByCreateTimeAsc":
	case "ByCreateTimeDesc":
		desc = true
	default:
		return invalidField("sort_type: unknown %q", st)
	}
	pageSize := defPageSize
	if p := q.query("page_size"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxPageSize {
			return invalidField("page_size: between 1 and %d, got %q", maxPageSize, p)
		}
		pageSize = n
	}
	start, end := int64(0), int64(1<<62)
	for _, b := range []struct {
		name string
		dst  *int64
	}{{"start_time", &start}, {"end_time", &end}} {
		raw := q.query(b.name)
		if raw == "" {
			continue
		}
		if containerType == "thread" {
			return fail(http.StatusBadRequest, CodeInvalidParam, b.name+" is not supported for thread containers")
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			return invalidField("%s: want unix seconds, got %q", b.name, raw)
		}
		*b.dst = n
	}
	var cursor *cursorKey
	if t := q.query("page_token"); t != "" {
		c, err := parsePageToken(t)
		if err != nil {
			return invalidField("page_token: %v", err)
		}
		cursor = &c
	}

	var recs []*record
	switch containerType {
	case "chat":
		c, known := s.chats[containerID]
		if !known {
			return failCode(CodeBotNotInChat)
		}
		for _, id := range c.msgs {
			r := s.msgs[id]
			if r.m.ThreadID != "" && r.m.RootID != "" {
				continue // a topic reply; the chat lists only the root
			}
			if sec := r.m.CreateTime.Unix(); sec < start || sec > end {
				continue
			}
			recs = append(recs, r)
		}
	case "thread":
		for _, r := range s.msgs {
			if r.m.ThreadID == containerID && r.m.UpperMessageID == "" {
				recs = append(recs, r)
			}
		}
	default:
		return invalidField("container_id_type: want chat or thread, got %q", containerType)
	}
	order := func(a, b *record) int {
		if c := cursorOf(a).compare(cursorOf(b)); c != 0 {
			if desc {
				return -c
			}
			return c
		}
		return 0
	}
	slices.SortFunc(recs, order)
	if cursor != nil {
		i := 0
		for i < len(recs) {
			c := cursorOf(recs[i]).compare(*cursor)
			if (!desc && c > 0) || (desc && c < 0) {
				break
			}
			i++
		}
		recs = recs[i:]
	}
	hasMore := len(recs) > pageSize
	if hasMore {
		recs = recs[:pageSize]
	}
	items := make([]apiMessage, 0, len(recs))
	for _, r := range recs {
		items = append(items, s.item(r, v))
	}
	type page struct {
		HasMore   bool         `json:"has_more"`
		PageToken string       `json:"page_token,omitempty"`
		Items     []apiMessage `json:"items"`
	}
	p := page{HasMore: hasMore, Items: items}
	if hasMore {
		p.PageToken = cursorOf(recs[len(recs)-1]).token()
	}
	return ok(p)
}

// cursorKey is a position in a history: create_time, then insertion.
type cursorKey struct {
	ms  int64
	seq uint64
}

func cursorOf(r *record) cursorKey { return cursorKey{r.m.CreateTime.UnixMilli(), r.seq} }

func (c cursorKey) compare(o cursorKey) int {
	switch {
	case c.ms != o.ms:
		if c.ms < o.ms {
			return -1
		}
		return 1
	case c.seq < o.seq:
		return -1
	case c.seq > o.seq:
		return 1
	}
	return 0
}

func (c cursorKey) token() string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "sim1.%d.%d", c.ms, c.seq))
}

// parsePageToken reads a token made by cursorKey.token.
func parsePageToken(t string) (cursorKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return cursorKey{}, fmt.Errorf("not a page token: %w", err)
	}
	rest, found := strings.CutPrefix(string(b), "sim1.")
	if !found {
		return cursorKey{}, fmt.Errorf("not a page token")
	}
	msPart, seqPart, found := strings.Cut(rest, ".")
	if !found {
		return cursorKey{}, fmt.Errorf("not a page token")
	}
	msv, err := strconv.ParseInt(msPart, 10, 64)
	if err != nil {
		return cursorKey{}, fmt.Errorf("page token time: %w", err)
	}
	seq, err := strconv.ParseUint(seqPart, 10, 64)
	if err != nil {
		return cursorKey{}, fmt.Errorf("page token position: %w", err)
	}
	return cursorKey{msv, seq}, nil
}

// sendRequest is the body of create and reply.
type sendRequest struct {
	ReceiveID     string `json:"receive_id"`
	MsgType       string `json:"msg_type"`
	Content       string `json:"content"`
	UUID          string `json:"uuid"`
	ReplyInThread bool   `json:"reply_in_thread"`
}

// mediaTypes are the msg_types that show an uploaded image or file.
var mediaTypes = map[string]bool{"image": true, "file": true, "audio": true, "media": true}

// withFileName adds the uploaded file's name to a sent file message's
// content, as the platform serves it.
func withFileName(content, name string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(content), &obj) != nil {
		return content
	}
	if _, has := obj["file_name"]; has {
		return content
	}
	obj["file_name"] = name
	b, err := json.Marshal(obj)
	if err != nil {
		return content
	}
	return string(b)
}

// sendable lists the msg_types a bot can send.
var sendable = map[string]bool{
	"text": true, "post": true, "image": true, "file": true, "audio": true, "media": true,
	"sticker": true, "interactive": true, "share_chat": true, "share_user": true,
}

func checkSend(req *sendRequest) *answer {
	if !sendable[req.MsgType] {
		return invalidField("msg_type: unknown %q", req.MsgType)
	}
	if utf8.RuneCountInString(req.UUID) > maxUUID {
		return invalidField("uuid: at most %d characters", maxUUID)
	}
	var obj map[string]json.RawMessage
	if req.Content == "" || json.Unmarshal([]byte(req.Content), &obj) != nil {
		return fail(http.StatusBadRequest, CodeInvalidParam, "invalid message content: want a JSON object")
	}
	limit := maxRichContent
	if req.MsgType == "text" {
		limit = maxTextContent
	}
	if len(req.Content) > limit {
		return failCode(CodeContentTooLong)
	}
	return nil
}

// createMessage serves POST /open-apis/im/v1/messages.
func (s *Sim) createMessage(q *request) *answer {
	var req sendRequest
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	if a := checkSend(&req); a != nil {
		return a
	}
	idType := q.query("receive_id_type")
	var chatID string
	switch idType {
	case "chat_id":
		if _, known := s.chats[req.ReceiveID]; !known {
			return failCode(CodeBotNotInChat)
		}
		chatID = req.ReceiveID
	case "open_id":
		if _, known := s.users[req.ReceiveID]; !known {
			return failCode(CodeUserUnavailable)
		}
		chatID = s.p2pChatLocked(req.ReceiveID)
	default:
		return invalidField("receive_id_type: want chat_id or open_id, got %q", idType)
	}
	return s.send(q, req, chatID, idType, nil)
}

// p2pChatLocked returns the bot's private chat with a user, making one.
func (s *Sim) p2pChatLocked(openID string) string {
	for id, c := range s.chats {
		if c.kind == ChatP2P && c.p2pUser == openID {
			return id
		}
	}
	id := "oc_sim" + derivedID("p2p", openID, 26)
	s.chats[id] = &chat{kind: ChatP2P, p2pUser: openID}
	return id
}

// replyMessage serves POST /open-apis/im/v1/messages/:message_id/reply.
func (s *Sim) replyMessage(q *request) *answer {
	var req sendRequest
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	if a := checkSend(&req); a != nil {
		return a
	}
	target, known := s.msgs[q.params[0]]
	switch {
	case !known:
		return failCode(CodeDeleted)
	case target.m.Deleted:
		return failCode(CodeRecalled)
	case target.m.ChatID == "":
		return failCode(CodeReplyUnavailable)
	}
	return s.send(q, req, target.m.ChatID, "", target)
}

// send stores and records one outgoing message, honouring the uuid
// window and the per-chat rate limit.
func (s *Sim) send(q *request, req sendRequest, chatID, idType string, target *record) *answer {
	now := q.now
	if req.UUID != "" {
		if e, seen := s.uuids[req.UUID]; seen && now.Sub(e.at) < uuidWindow {
			if r, known := s.msgs[e.messageID]; known {
				return ok(s.item(r, view{idType: "open_id"}))
			}
		}
	}
	var up Upload
	if mediaTypes[req.MsgType] {
		var a *answer
		if up, a = s.checkMediaKey(&req); a != nil {
			return a
		}
	}
	if req.MsgType == "interactive" {
		if a := s.checkCardMessage(req.Content); a != nil {
			return a
		}
	}
	if s.rateLimit {
		recent := s.sendTimes[chatID][:0]
		for _, t := range s.sendTimes[chatID] {
			if now.Sub(t) < sendWindow {
				recent = append(recent, t)
			}
		}
		s.sendTimes[chatID] = recent
		if len(recent) >= sendsPerWindow {
			return failCode(CodeIMRateLimited)
		}
		s.sendTimes[chatID] = append(recent, now)
	}
	m := Message{
		ChatID: chatID, MsgType: req.MsgType, Content: req.Content,
		SenderID: s.opts.AppID, SenderType: SenderApp, CreateTime: now,
	}
	if req.MsgType == "interactive" {
		m.CardContent, m.Content = req.Content, DegradedCard
	}
	if up.Key != "" {
		// What the bot sent can be downloaded back through the message.
		m.Resources = map[string][]byte{up.Key: up.Data}
		if up.FileName != "" && req.MsgType != "image" {
			m.Content = withFileName(req.Content, up.FileName)
		}
	}
	if target != nil {
		m.ParentID = target.m.ID
		m.RootID = target.m.RootID
		if m.RootID == "" {
			m.RootID = target.m.ID
		}
		m.ThreadID = target.m.ThreadID
		inTopic := s.chats[chatID].kind == ChatTopicGroup
		if m.ThreadID == "" && (req.ReplyInThread || inTopic) {
			s.threadSeq++
			m.ThreadID = fmt.Sprintf("omt_sim%024x", s.threadSeq)
			if root, known := s.msgs[m.RootID]; known {
				root.m.ThreadID = m.ThreadID
			}
		}
	}
	id, err := s.addMessageLocked(m)
	if err != nil {
		return fail(http.StatusInternalServerError, CodeInternalError, err.Error())
	}
	if req.UUID != "" {
		s.uuids[req.UUID] = uuidEntry{messageID: id, at: now}
	}
	sm := SentMessage{
		MessageID: id, ChatID: chatID, MsgType: req.MsgType, Content: req.Content, Key: up.Key,
		UUID: req.UUID, ReplyInThread: req.ReplyInThread, Time: now,
	}
	if target != nil {
		sm.ReplyTo = target.m.ID
	} else {
		sm.ReceiveIDType, sm.ReceiveID = idType, req.ReceiveID
	}
	s.sent = append(s.sent, sm)
	return ok(s.item(s.msgs[id], view{idType: "open_id"}))
}

// deleteMessage serves DELETE /open-apis/im/v1/messages/:message_id: the
// bot recalls a message it sent.
func (s *Sim) deleteMessage(q *request) *answer {
	r, known := s.msgs[q.params[0]]
	switch {
	case !known:
		return failCode(CodeDeleted)
	case r.m.Deleted:
		return failCode(CodeRecalled)
	case r.m.SenderID != s.opts.AppID:
		return failCode(CodeNoPermission)
	}
	r.m.Deleted = true
	return ok(struct{}{})
}

type apiReaction struct {
	ReactionID string `json:"reaction_id"`
	Operator   struct {
		OperatorID   string `json:"operator_id"`
		OperatorType string `json:"operator_type"`
	} `json:"operator"`
	ActionTime   string `json:"action_time"`
	ReactionType struct {
		EmojiType string `json:"emoji_type"`
	} `json:"reaction_type"`
}

func (s *Sim) reactionJSON(r *Reaction, at time.Time) apiReaction {
	var a apiReaction
	a.ReactionID = r.ReactionID
	a.Operator.OperatorID, a.Operator.OperatorType = s.opts.AppID, "app"
	a.ActionTime = ms(at)
	a.ReactionType.EmojiType = r.EmojiType
	return a
}

// addReaction serves POST /open-apis/im/v1/messages/:message_id/reactions.
func (s *Sim) addReaction(q *request) *answer {
	var req struct {
		ReactionType struct {
			EmojiType string `json:"emoji_type"`
		} `json:"reaction_type"`
	}
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	if req.ReactionType.EmojiType == "" {
		return invalidField("reaction_type.emoji_type: required")
	}
	target, known := s.msgs[q.params[0]]
	switch {
	case !known:
		return failCode(CodeDeleted)
	case target.m.Deleted:
		return failCode(CodeRecalled)
	}
	s.reactSeq++
	r := &Reaction{
		ReactionID: fmt.Sprintf("ZCsim%016x", s.reactSeq), MessageID: target.m.ID,
		EmojiType: req.ReactionType.EmojiType, Added: q.now,
	}
	s.reactions = append(s.reactions, r)
	return ok(s.reactionJSON(r, q.now))
}

// deleteReaction serves DELETE
// /open-apis/im/v1/messages/:message_id/reactions/:reaction_id.
func (s *Sim) deleteReaction(q *request) *answer {
	msgID, reactionID := q.params[0], q.params[2]
	if _, known := s.msgs[msgID]; !known {
		return failCode(CodeDeleted)
	}
	for _, r := range s.reactions {
		if r.ReactionID == reactionID && r.MessageID == msgID && !r.Removed {
			r.Removed, r.RemovedAt = true, q.now
			return ok(s.reactionJSON(r, q.now))
		}
	}
	return fail(http.StatusBadRequest, CodeInvalidParam, "reaction not found")
}

// getResource serves GET
// /open-apis/im/v1/messages/:message_id/resources/:file_key. A key is
// found in the message's own resources or, for a merge_forward, in any
// of its descendants' (the platform lets the container's id download a
// child's file).
func (s *Sim) getResource(q *request) *answer {
	msgID, key := q.params[0], q.params[2]
	switch t := q.query("type"); t {
	case "image", "file":
	default:
		return invalidField("type: want image or file, got %q", t)
	}
	r, known := s.msgs[msgID]
	if !known {
		return failCode(CodeDeleted)
	}
	owner, data, found := s.findResource(r, key, 0)
	if !found {
		return failCode(CodeFileNotInMessage)
	}
	name := key
	var c struct {
		FileName string `json:"file_name"`
		FileKey  string `json:"file_key"`
	}
	if json.Unmarshal([]byte(owner.m.Content), &c) == nil && c.FileKey == key && c.FileName != "" {
		name = c.FileName
	}
	h := http.Header{}
	ct := "application/octet-stream"
	if q.query("type") == "image" {
		// Images come with their type; files as a stream.
		ct = http.DetectContentType(data)
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	return &answer{status: http.StatusOK, header: h, raw: append([]byte{}, data...)}
}

func (s *Sim) findResource(r *record, key string, depth int) (*record, []byte, bool) {
	if data, found := r.m.Resources[key]; found {
		return r, data, true
	}
	if depth >= maxTreeDepth {
		return nil, nil, false
	}
	for _, id := range r.children {
		if c, known := s.msgs[id]; known {
			if owner, data, found := s.findResource(c, key, depth+1); found {
				return owner, data, true
			}
		}
	}
	return nil, nil, false
}
