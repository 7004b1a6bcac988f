package onebotsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Message is a message the peer was asked to send (send_group_msg,
// send_private_msg or send_msg), with its segments.
type Message struct {
	Action  string
	GroupID int64
	UserID  int64
	// Segments are the message's segments in order; a CQ-string message
	// is one text segment holding the string.
	Segments []Segment
}

// Segment is one segment of a sent message. Data values are strings: a
// JSON string as is, anything else as its JSON text.
type Segment struct {
	Type string
	Data map[string]string
}

// Types lists the segments' types, in order.
func (m Message) Types() []string {
	var out []string
	for _, s := range m.Segments {
		out = append(out, s.Type)
	}
	return out
}

// Upload is a file the peer was asked to upload (upload_group_file or
// upload_private_file).
type Upload struct {
	Action  string
	GroupID int64
	UserID  int64
	// File is what was passed as file: a path on the implementation's
	// host, a URL, or base64:// data.
	File string
	Name string
}

// File is a file the peer hands out through get_image, get_record and
// get_file.
type File struct {
	Data []byte
	// MIME is the Content-Type its URL is served with.
	MIME string
	// Name is answered as file_name; the id when empty.
	Name string
	// Path is answered as file: where the implementation keeps it on its
	// own host. When empty, a path under NapCat's cache directory that
	// does not exist here.
	Path string
	// NoBase64 and NoURL leave base64 and url out of the answer. NapCat
	// answers base64 only when configured to; url is QQ's (rkey-signed)
	// URL for images and videos and the local path for other files.
	NoBase64, NoURL bool
}

// downloadPath is where the peer serves its files, as QQ's media server
// does: /download?fileid=<id>&rkey=<key>.
const downloadPath = "/download"

// SetFile makes id fetchable: get_image, get_record and get_file with id
// as file or file_id answer as NapCat does with base64 enabled (file,
// url, file_size, file_name and base64), and the URL FileURL(id) serves
// data as mime until ExpireURLs.
func (p *Peer) SetFile(id string, data []byte, mime string) {
	p.SetFileAnswer(id, File{Data: data, MIME: mime})
}

// SetFileAnswer is SetFile with control over the answer.
func (p *Peer) SetFileAnswer(id string, f File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files[id] = f
}

// FileURL is the URL of id's content with the current rkey, as an
// image segment's url; empty when the peer has no HTTPURL.
func (p *Peer) FileURL(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fileURLLocked(id)
}

func (p *Peer) fileURLLocked(id string) string {
	if p.HTTPURL == "" {
		return ""
	}
	return p.HTTPURL + downloadPath + "?appid=1407&fileid=" + url.QueryEscape(id) + "&rkey=" + rkeyName(p.rkey)
}

func rkeyName(n int) string { return "simrkey" + strconv.Itoa(n) }

// ExpireURLs rotates the rkey: every URL handed out so far answers 403,
// as QQ's do once their rkey expires. get_image and the others answer
// fresh URLs.
func (p *Peer) ExpireURLs() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rkey++
}

// Sent returns the messages the peer was asked to send so far, refused
// ones included.
func (p *Peer) Sent() []Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Message(nil), p.sent...)
}

// Uploads returns the files the peer was asked to upload so far, refused
// ones included.
func (p *Peer) Uploads() []Upload {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Upload(nil), p.uploads...)
}

// record keeps the sends and uploads among the calls; p.mu is held.
func (p *Peer) record(action string, params json.RawMessage) {
	var f struct {
		GroupID json.RawMessage `json:"group_id"`
		UserID  json.RawMessage `json:"user_id"`
		Message json.RawMessage `json:"message"`
		File    string          `json:"file"`
		Name    string          `json:"name"`
	}
	switch action {
	case "send_group_msg", "send_private_msg", "send_msg":
		_ = json.Unmarshal(params, &f)
		p.sent = append(p.sent, Message{Action: action, GroupID: number(f.GroupID), UserID: number(f.UserID), Segments: segments(f.Message)})
	case "upload_group_file", "upload_private_file":
		_ = json.Unmarshal(params, &f)
		p.uploads = append(p.uploads, Upload{Action: action, GroupID: number(f.GroupID), UserID: number(f.UserID), File: f.File, Name: f.Name})
	}
}

// builtin answers the actions the peer plays itself: uploads (always),
// and the gets of files set with SetFile. ok is false for the handler to
// answer.
func (p *Peer) builtin(action string, params json.RawMessage) (data any, ok bool) {
	switch action {
	case "upload_group_file", "upload_private_file":
		p.mu.Lock()
		n := len(p.uploads)
		p.mu.Unlock()
		return map[string]any{"file_id": "/sim-upload-" + strconv.Itoa(n)}, true
	case "get_image", "get_record", "get_file":
	default:
		return nil, false
	}
	var q struct {
		File   string `json:"file"`
		FileID string `json:"file_id"`
	}
	_ = json.Unmarshal(params, &q)
	p.mu.Lock()
	defer p.mu.Unlock()
	id := q.FileID
	f, found := p.files[id]
	if !found {
		id = q.File
		f, found = p.files[id]
	}
	if !found || id == "" {
		return nil, false
	}
	name := f.Name
	if name == "" {
		name = id
	}
	ans := map[string]any{"file_size": strconv.Itoa(len(f.Data)), "file_name": name}
	ans["file"] = f.Path
	if f.Path == "" {
		ans["file"] = "/root/.config/QQ/NapCat/temp/" + name
	}
	if u := p.fileURLLocked(id); !f.NoURL && u != "" {
		ans["url"] = u
	}
	if !f.NoBase64 {
		ans["base64"] = base64.StdEncoding.EncodeToString(f.Data)
	}
	return ans, true
}

// serveFile serves a file of SetFile at its URL; an unknown file or a
// stale rkey gets 403.
func (p *Peer) serveFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	f, ok := p.files[q.Get("fileid")]
	fresh := q.Get("rkey") == rkeyName(p.rkey)
	p.mu.Unlock()
	if !ok || !fresh {
		http.Error(w, "rkey expired", http.StatusForbidden)
		return
	}
	if f.MIME != "" {
		w.Header().Set("Content-Type", f.MIME)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	_, _ = w.Write(f.Data)
}

// number reads an id sent as a JSON number or a numeric string; 0 when
// it is neither.
func number(raw json.RawMessage) int64 {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// segments reads a message param: a segment array, one segment, or a CQ
// string (kept whole as one text segment).
func segments(raw json.RawMessage) []Segment {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	type rawSeg struct {
		Type string                     `json:"type"`
		Data map[string]json.RawMessage `json:"data"`
	}
	var list []rawSeg
	switch raw[0] {
	case '[':
		_ = json.Unmarshal(raw, &list)
	case '{':
		var one rawSeg
		if json.Unmarshal(raw, &one) == nil {
			list = []rawSeg{one}
		}
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return []Segment{{Type: "text", Data: map[string]string{"text": s}}}
	}
	out := make([]Segment, 0, len(list))
	for _, rs := range list {
		seg := Segment{Type: rs.Type, Data: map[string]string{}}
		for k, v := range rs.Data {
			var s string
			if json.Unmarshal(v, &s) == nil {
				seg.Data[k] = s
			} else {
				seg.Data[k] = string(v)
			}
		}
		out = append(out, seg)
	}
	return out
}
