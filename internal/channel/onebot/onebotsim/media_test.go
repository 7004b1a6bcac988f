package onebotsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
)

// call posts an action to the peer's HTTP API and returns the answer.
func call(t *testing.T, p *Peer, action, params string) (status string, retcode int, data map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.HTTPURL+"/"+action, bytes.NewReader([]byte(params)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var resp struct {
		Status  string         `json:"status"`
		Retcode int            `json:"retcode"`
		Data    map[string]any `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	return resp.Status, resp.Retcode, resp.Data
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func TestSendsUploadsAndFiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := Serve(ln, func(action string, _ json.RawMessage) (any, int, string) {
		if action == "get_image" {
			return map[string]any{"file": "/from/the/handler"}, 0, ""
		}
		return map[string]any{"message_id": 1}, 0, ""
	})
	defer p.Close()

	call(t, p, "send_group_msg", `{"group_id":"7","message":[{"type":"reply","data":{"id":-5}},{"type":"image","data":{"file":"file:///x.png"}}]}`)
	call(t, p, "send_private_msg", `{"user_id":9,"message":{"type":"record","data":{"file":"base64://AA=="}}}`)
	call(t, p, "send_msg", `{"message_type":"group","group_id":7,"message":"[CQ:face,id=1]"}`)
	want := []Message{
		{Action: "send_group_msg", GroupID: 7, Segments: []Segment{{Type: "reply", Data: map[string]string{"id": "-5"}}, {Type: "image", Data: map[string]string{"file": "file:///x.png"}}}},
		{Action: "send_private_msg", UserID: 9, Segments: []Segment{{Type: "record", Data: map[string]string{"file": "base64://AA=="}}}},
		{Action: "send_msg", GroupID: 7, Segments: []Segment{{Type: "text", Data: map[string]string{"text": "[CQ:face,id=1]"}}}},
	}
	if got := p.Sent(); !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v", got)
	}

	status, _, data := call(t, p, "upload_group_file", `{"group_id":7,"file":"/tmp/a.pdf","name":"a.pdf"}`)
	if status != "ok" || data["file_id"] == nil {
		t.Errorf("upload answer %s %v", status, data)
	}
	p.Refuse("upload_private_file", 100, "no")
	if status, retcode, _ := call(t, p, "upload_private_file", `{"user_id":9,"file":"https://h/b.zip","name":"b.zip"}`); status != "failed" || retcode != 100 {
		t.Errorf("refused upload answered %s %d", status, retcode)
	}
	wantUp := []Upload{{Action: "upload_group_file", GroupID: 7, File: "/tmp/a.pdf", Name: "a.pdf"}, {Action: "upload_private_file", UserID: 9, File: "https://h/b.zip", Name: "b.zip"}}
	if got := p.Uploads(); !reflect.DeepEqual(got, wantUp) {
		t.Errorf("uploads %+v", got)
	}

	p.SetFile("A1.jpg", []byte("jpeg"), "image/jpeg")
	_, _, data = call(t, p, "get_image", `{"file":"A1.jpg"}`)
	if data["base64"] != base64.StdEncoding.EncodeToString([]byte("jpeg")) || data["file_size"] != "4" || data["file_name"] != "A1.jpg" || data["file"] == "" {
		t.Errorf("get_image answer %v", data)
	}
	url, _ := data["url"].(string)
	if code, body := get(t, url); code != http.StatusOK || string(body) != "jpeg" {
		t.Errorf("GET %s: %d %q", url, code, body)
	}
	p.ExpireURLs()
	if code, _ := get(t, url); code != http.StatusForbidden {
		t.Errorf("an expired URL answered %d", code)
	}
	if fresh := p.FileURL("A1.jpg"); fresh == url {
		t.Error("FileURL must carry the new rkey")
	} else if code, _ := get(t, fresh); code != http.StatusOK {
		t.Errorf("fresh URL answered %d", code)
	}
	p.SetFileAnswer("f", File{Data: []byte("x"), Path: "/data/f", NoBase64: true, NoURL: true})
	_, _, data = call(t, p, "get_file", `{"file_id":"f"}`)
	if data["file"] != "/data/f" || data["base64"] != nil || data["url"] != nil {
		t.Errorf("get_file answer %v", data)
	}
	if _, _, data = call(t, p, "get_image", `{"file":"unknown.jpg"}`); data["file"] != "/from/the/handler" {
		t.Errorf("a file the peer was not given is the handler's to answer: %v", data)
	}
}
