package larkmsg

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeItemsGetAnswer(t *testing.T) {
	raw := `{"code": 0, "msg": "success", "data": {"items": [{
  "message_id": "om_a1", "root_id": "om_r", "parent_id": "om_p", "thread_id": "omt_t",
  "msg_type": "text", "create_time": "1760000000321", "update_time": "1760000000321",
  "deleted": false, "updated": false, "chat_id": "oc_5ad11d72b830411d72b836c20",
  "sender": {"id": "ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", "id_type": "open_id", "sender_type": "user", "tenant_key": "2ca1d211f64f6438"},
  "body": {"content": "{\"text\":\"@_user_1 方案见附件\"}"},
  "mentions": [{"key": "@_user_1", "id": "ou_3b8f1c2d4e5a6b7c8d9e0f1a2b3c4d5e", "id_type": "open_id", "name": "张三", "tenant_key": "2ca1d211f64f6438"}],
  "upper_message_id": ""
}]}}`
	p, err := DecodeItems([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := Page{Items: []Item{{
		MessageID: "om_a1", RootID: "om_r", ParentID: "om_p", ThreadID: "omt_t",
		MsgType: "text", CreateTime: "1760000000321", ChatID: "oc_5ad11d72b830411d72b836c20",
		Sender:   Sender{ID: "ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", IDType: "open_id", SenderType: "user"},
		Body:     Body{Content: `{"text":"@_user_1 方案见附件"}`},
		Mentions: []Mention{{Key: "@_user_1", ID: "ou_3b8f1c2d4e5a6b7c8d9e0f1a2b3c4d5e", IDType: "open_id", Name: "张三"}},
	}}}
	if d := cmp.Diff(want, p); d != "" {
		t.Fatalf("page (-want +got):\n%s", d)
	}
}

func TestDecodeItemsListAnswer(t *testing.T) {
	raw := `{"code": 0, "msg": "success", "data": {"has_more": true, "page_token": "GxmvlNRvP0Nd", "items": [
  {"message_id": "om_h1", "msg_type": "text", "create_time": "1759996800000", "chat_id": "oc_1",
   "sender": {"id": "ou_3b", "id_type": "open_id", "sender_type": "user"},
   "body": {"content": "{\"text\":\"早\"}"}, "deleted": false},
  {"message_id": "om_h2", "msg_type": "merge_forward", "create_time": "1759996860000", "chat_id": "oc_1",
   "sender": {"id": "ou_7c", "id_type": "open_id", "sender_type": "user"},
   "body": {"content": "Merged and Forwarded Message"}, "deleted": false}
]}}`
	p, err := DecodeItems([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasMore || p.PageToken != "GxmvlNRvP0Nd" || len(p.Items) != 2 {
		t.Fatalf("page = %+v", p)
	}
	if got := p.Items[1].Body.Content; got != MergeForwardText {
		t.Errorf("container content = %q, want the bare string", got)
	}
}

func TestDecodeItemsAPIError(t *testing.T) {
	_, err := DecodeItems([]byte(`{"code":230027,"msg":"Lack of necessary permissions"}`))
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 230027 || apiErr.Msg != "Lack of necessary permissions" {
		t.Fatalf("err = %v, want APIError 230027", err)
	}
	if got, want := err.Error(), "feishu: code 230027: Lack of necessary permissions"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// A code written as a string still counts.
	_, err = DecodeItems([]byte(`{"code":"230110","msg":"deleted"}`))
	if !errors.As(err, &apiErr) || apiErr.Code != 230110 {
		t.Fatalf("err = %v, want APIError 230110", err)
	}
}

func TestDecodeItemsNotJSON(t *testing.T) {
	for _, raw := range []string{"", "<html>502</html>", "[1,2]", `{"code":"x"}`} {
		if _, err := DecodeItems([]byte(raw)); err == nil {
			t.Errorf("DecodeItems(%q) succeeded", raw)
		}
	}
}

func TestDecodeItemsLenient(t *testing.T) {
	raw := `{"code":0,"data":{"items":[
	  "junk", 7, null,
	  {"message_id":"om_1","msg_type":"interactive","create_time":1760000000321,"deleted":"true",
	   "sender":"nobody","body":{"content":{"schema":"2.0"}},
	   "mentions":[{"key":"@_user_1","id":{"open_id":"ou_x","union_id":"on_x"},"name":"甲"},"bad",
	               {"key":"@_user_2","id":{"user_id":"u2"},"name":"乙"}]},
	  {"message_id":"om_2","msg_type":["x"],"body":"flat","mentions":{}}
	]}}`
	p, err := DecodeItems([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{
		{
			MessageID: "om_1", MsgType: "interactive", CreateTime: "1760000000321", Deleted: true,
			Body: Body{Content: `{"schema":"2.0"}`},
			Mentions: []Mention{
				{Key: "@_user_1", ID: "ou_x", IDType: "open_id", Name: "甲"},
				{Key: "@_user_2", ID: "u2", IDType: "user_id", Name: "乙"},
			},
		},
		{MessageID: "om_2"},
	}
	if d := cmp.Diff(want, p.Items); d != "" {
		t.Fatalf("items (-want +got):\n%s", d)
	}
	// No data, or data without items: an empty page, not an error.
	for _, raw := range []string{`{"code":0,"msg":"ok"}`, `{"code":0,"data":{}}`, `{"code":0,"data":[]}`, `{"code":0,"data":{"items":{}}}`} {
		p, err := DecodeItems([]byte(raw))
		if err != nil || len(p.Items) != 0 {
			t.Errorf("DecodeItems(%s) = %+v, %v", raw, p, err)
		}
	}
}
