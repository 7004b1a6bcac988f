package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// An action's answer is read without building its tree: its members are
// scanned and only the few an answer has are kept, data copied as it was
// written. Implementations write an answer's status, retcode, data or
// echo first, an event's time, self_id or post_type; a frame that begins
// like an answer is read so, and one that turns out not to be one, or not
// the usual kind (see usual and plainKey), is decoded the long way.

// answerKeys are the members an answer may begin with.
var answerKeys = map[string]bool{"status": true, "retcode": true, "data": true, "echo": true, "message": true, "wording": true, "msg": true, "stream": true}

// beginsLikeAnswer reports whether the first member of the object frame
// is one an answer begins with.
func beginsLikeAnswer(frame []byte) bool {
	i := skipSpace(frame, 0)
	if i >= len(frame) || frame[i] != '{' {
		return false
	}
	i = skipSpace(frame, i+1)
	end := skipString(frame, i)
	if i >= len(frame) || frame[i] != '"' || end < 0 {
		return false
	}
	return answerKeys[string(frame[i+1:end-1])]
}

// decodeAnswer reads frame as an answer, as encoding/json would read it
// into a Response; false when it is not one, or not usual.
func decodeAnswer(frame []byte) (Response, bool) {
	if !usual(frame) || fastjson.ValidateBytes(frame) != nil {
		return Response{}, false
	}
	const (
		status = iota
		retcode
		data
		echo
		message
		wording
		msgText
		fields
	)
	var raw [fields][]byte
	for key, value := range members(frame) {
		k := key[1 : len(key)-1]
		f := -1
		switch string(k) {
		case "status":
			f = status
		case "retcode":
			f = retcode
		case "data":
			f = data
		case "echo":
			f = echo
		case "message":
			f = message
		case "wording":
			f = wording
		case "msg":
			f = msgText
		case "post_type":
			return Response{}, false // an event after all
		default:
			if !plainKey(k) || bytes.IndexByte(k, '\\') >= 0 {
				return Response{}, false
			}
			continue
		}
		if raw[f] != nil {
			return Response{}, false // twice: encoding/json takes the last
		}
		raw[f] = value
	}
	if raw[status] == nil && raw[retcode] == nil && raw[echo] == nil {
		return Response{}, false
	}
	return answerFrom(raw[status], raw[retcode], raw[message], raw[wording], raw[msgText], clone(raw[data]), clone(raw[echo]))
}

// answerFrom is the Response an answer's members make, as encoding/json
// would decode them (absent or null: none); false when one is not what an
// answer carries (a status or a failure text that is not a string, a
// retcode that is not an integer). data and echo are kept as they are.
func answerFrom(status, retcode, message, wording, msg []byte, data, echo json.RawMessage) (Response, bool) {
	r := Response{Data: data, Echo: echo}
	ok := text(status, &r.Status) && text(message, &r.Message) && text(wording, &r.Wording) && text(msg, &r.Msg)
	if ok && retcode != nil && !bytes.Equal(retcode, []byte("null")) {
		n, err := strconv.Atoi(string(retcode))
		r.Retcode, ok = n, err == nil
	}
	return r, ok
}

// text decodes a string member (absent or null: none) as encoding/json
// does; false when it is not a string.
func text(raw []byte, to *string) bool {
	switch {
	case raw == nil || bytes.Equal(raw, []byte("null")):
		return true
	case len(raw) < 2 || raw[0] != '"':
		return false
	case bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw):
		*to = string(raw[1 : len(raw)-1])
		return true
	}
	return json.Unmarshal(raw, to) == nil
}

// clone copies a member's bytes out of the frame, nil for none.
func clone(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}
