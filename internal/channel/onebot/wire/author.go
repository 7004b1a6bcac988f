package wire

import (
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

// authorFast is Author by the fast decoder, for the usual answer; false
// when encoding/json is to decide (see usual and plainKey).
func authorFast(data []byte) (ID, bool) {
	if !usual(data) || fastjson.ValidateBytes(data) != nil {
		return 0, false
	}
	parser := parsers.Get()
	defer parsers.Put(parser)
	v, err := parser.ParseBytes(data)
	if err != nil {
		return 0, false
	}
	obj, err := v.Object()
	if err != nil {
		return 0, false
	}
	var sender, user ID
	senders, users, ok := 0, 0, true
	obj.Visit(func(key []byte, v *fastjson.Value) {
		switch string(key) {
		case "user_id":
			users++
			ok = ok && setID(&user, v)
		case "sender":
			senders++
			ok = ok && senderID(&sender, v)
		default:
			ok = ok && plainKey(key)
		}
	})
	if !ok || users > 1 || senders > 1 {
		return 0, false
	}
	return firstID(sender, user), true
}

// senderID reads a sender object's user_id (null: none).
func senderID(id *ID, v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeObject:
	default:
		return false
	}
	n, ok := 0, true
	v.GetObject().Visit(func(key []byte, v *fastjson.Value) {
		if string(key) == "user_id" {
			n++
			ok = ok && setID(id, v)
			return
		}
		ok = ok && plainKey(key)
	})
	return ok && n <= 1
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
