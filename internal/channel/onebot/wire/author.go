package wire

import (
	"bytes"
	"encoding/json"

	"github.com/valyala/fastjson"
)

// Author reads who sent the message get_msg answered with: its sender's
// user_id, else its own user_id (Lagrange sends only the sender); 0 when
// data names neither. ok is false when data is not such an object.
func Author(data json.RawMessage) (id ID, ok bool) {
	if id, ok := authorFast(data); ok {
		return id, true
	}
	return authorSlow(data)
}

// authorFast is Author by a scan of the answer's members, for the usual
// answer; false when encoding/json is to decide (see usual and
// plainKey).
func authorFast(data []byte) (ID, bool) {
	if !usual(data) || fastjson.ValidateBytes(data) != nil {
		return 0, false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return 0, false
	}
	var sender, user ID
	senders, users, ok := 0, 0, true
	for key, value := range members(data) {
		switch k := key[1 : len(key)-1]; string(k) {
		case "user_id":
			users++
			ok = ok && user.UnmarshalJSON(value) == nil
		case "sender":
			senders++
			ok = ok && senderID(&sender, value)
		default:
			ok = ok && plainKey(k) && bytes.IndexByte(k, '\\') < 0
		}
		if !ok {
			return 0, false
		}
	}
	if users > 1 || senders > 1 {
		return 0, false
	}
	return firstID(sender, user), true
}

// senderID reads a sender object's user_id (null: none).
func senderID(id *ID, v []byte) bool {
	if bytes.Equal(v, []byte("null")) {
		return true
	}
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	n := 0
	for key, value := range members(v) {
		k := key[1 : len(key)-1]
		if string(k) == "user_id" {
			n++
			if id.UnmarshalJSON(value) != nil {
				return false
			}
			continue
		}
		if !plainKey(k) || bytes.IndexByte(k, '\\') >= 0 {
			return false
		}
	}
	return n <= 1
}

func authorSlow(data []byte) (ID, bool) {
	var m struct {
		UserID ID `json:"user_id"`
		Sender struct {
			UserID ID `json:"user_id"`
		} `json:"sender"`
	}
	if json.Unmarshal(data, &m) != nil {
		return 0, false
	}
	return firstID(m.Sender.UserID, m.UserID), true
}

// firstID is the first of ids that is not 0.
func firstID(ids ...ID) ID {
	for _, id := range ids {
		if id != 0 {
			return id
		}
	}
	return 0
}
