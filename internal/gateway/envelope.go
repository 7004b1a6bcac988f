package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/pincerbot/pincer/internal/jsonstr"
	"github.com/pincerbot/pincer/internal/msg"
)

// appendEnvelope appends the envelope of a message's JSON body (written
// by msg.Message.AppendJSON) to dst, byte for byte as json.Marshal writes
// an envelope, without its pass over the body: json.Marshal validates and
// compacts a RawMessage, which the body needs neither of.
func appendEnvelope(dst []byte, self string, at int64, body []byte) []byte {
	dst = append(dst, '{')
	if self != "" {
		dst = append(dst, `"self":`...)
		dst = jsonstr.Append(dst, self, true)
		dst = append(dst, ',')
	}
	dst = append(dst, `"at":`...)
	dst = strconv.AppendInt(dst, at, 10)
	dst = append(dst, `,"m":`...)
	dst = append(dst, body...)
	return append(dst, '}')
}

// decodeEnvelope reads an envelope and the message in it. The usual
// envelope, as appendEnvelope and json.Marshal write it, is read by its
// layout, its body scanned once, by the message's decoder; any other
// (fields in another order or after the body, an escaped string), or one
// whose body that does not read, goes through encoding/json whole.
func decodeEnvelope(data []byte) (envelope, msg.Message, error) {
	var m msg.Message
	if env, ok := parseUsualEnvelope(data); ok && json.Unmarshal(env.M, &m) == nil {
		return env, m, nil
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return env, msg.Message{}, err
	}
	m = msg.Message{}
	err := json.Unmarshal(env.M, &m)
	return env, m, err
}

func parseUsualEnvelope(data []byte) (env envelope, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{`))
	if !ok {
		return env, false
	}
	if r, ok := bytes.CutPrefix(rest, []byte(`"self":"`)); ok {
		end := bytes.IndexByte(r, '"')
		if end < 0 || !plainASCII(r[:end]) {
			return env, false // escaped, or what encoding/json refuses or replaces
		}
		env.Self = string(r[:end])
		if rest, ok = bytes.CutPrefix(r[end+1:], []byte(`,`)); !ok {
			return env, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`"at":`)); !ok {
		return env, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return env, false
	}
	if !jsonInteger(rest[:end]) {
		return env, false
	}
	at, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return env, false
	}
	env.At = at
	body, ok := bytes.CutPrefix(rest[end:], []byte(`,"m":{`))
	if !ok || len(body) < 2 || body[len(body)-1] != '}' {
		return env, false
	}
	env.M = data[len(data)-len(body)-1 : len(data)-1]
	return env, true
}

// plainASCII reports printable ASCII without a backslash: a JSON string's
// content that reads as it is written.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}

// jsonInteger reports an integer as JSON writes one: an optional minus,
// then 0 or digits not starting with 0.
func jsonInteger(b []byte) bool {
	b, _ = bytes.CutPrefix(b, []byte("-"))
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
