package msg

import (
	"encoding/json"
	"slices"

	"github.com/pincerbot/pincer/internal/jsonstr"
)

// AppendJSON appends m's JSON to dst: the very bytes json.Marshal writes
// for it (FuzzMessageJSON holds the two together), without reflection.
// Every message pincer takes in is logged as its JSON, and the
// reflection was the largest part of what logging one cost. A message
// json.Marshal refuses (a time past the year 9999) gets its error.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	orig := len(dst)
	// Room for the usual message at once, rather than growing the buffer
	// from nothing a few times: its text is written twice (the text and
	// its segments), and the rest is about 300 bytes.
	dst = slices.Grow(dst, 320+2*len(m.Text)+64*len(m.Segments))
	if out, ok := m.appendJSON(dst); ok {
		return out, nil
	}
	// The value, not m: passing m would make every caller's message
	// escape to the heap for this rare path.
	b, err := json.Marshal(*m)
	if err != nil {
		return dst[:orig], err
	}
	return append(dst[:orig], b...), nil
}

// appendJSON is AppendJSON; false when json.Marshal must write it.
func (m *Message) appendJSON(dst []byte) ([]byte, bool) {
	dst = appendKey(dst, '{', "ID")
	dst = jsonstr.Append(dst, string(m.ID), true)
	dst = appendKey(dst, ',', "Channel")
	dst = jsonstr.Append(dst, string(m.Channel), true)
	dst = appendKey(dst, ',', "Account")
	dst = jsonstr.Append(dst, string(m.Account), true)
	dst = appendKey(dst, ',', "Peer")
	dst = appendKey(dst, '{', "Kind")
	dst = jsonstr.Append(dst, string(m.Peer.Kind), true)
	dst = appendKey(dst, ',', "ID")
	dst = jsonstr.Append(dst, m.Peer.ID, true)
	dst = appendKey(append(dst, '}'), ',', "Sender")
	dst = appendKey(dst, '{', "ID")
	dst = jsonstr.Append(dst, string(m.Sender.ID), true)
	dst = appendString(dst, "Name", m.Sender.Name)
	dst = appendBool(dst, "IsBot", m.Sender.IsBot)
	dst = appendKey(append(dst, '}'), ',', "Time")
	dst = append(dst, '"')
	var err error
	if dst, err = m.Time.AppendText(dst); err != nil {
		return dst, false
	}
	dst = append(dst, '"')
	if m.Segments != nil {
		dst = appendKey(dst, ',', "Segments")
		for i := range m.Segments {
			dst = append(dst, "[,"[min(i, 1)])
			var ok bool
			if dst, ok = m.Segments[i].appendJSON(dst); !ok {
				return dst, false
			}
		}
		dst = closeArray(dst, len(m.Segments))
	}
	dst = appendString(dst, "Text", m.Text)
	dst = appendStrings(dst, "Mentions", m.Mentions)
	dst = appendBool(dst, "AtAll", m.AtAll)
	dst = appendString(dst, "ReplyTo", string(m.ReplyTo))
	dst = appendString(dst, "ReplyToSender", string(m.ReplyToSender))
	dst = appendStrings(dst, "ForwardIDs", m.ForwardIDs)
	dst = appendStrings(dst, "Deferred", m.Deferred)
	dst = appendBool(dst, "Recalled", m.Recalled)
	return append(dst, '}'), true
}

// appendJSON appends s's JSON; false when json.Marshal must write it (a
// message it carries does).
func (s *Segment) appendJSON(dst []byte) ([]byte, bool) {
	dst = append(dst, '{')
	start := len(dst)
	dst = appendString(dst, "Kind", string(s.Kind))
	dst = appendString(dst, "Text", s.Text)
	dst = appendString(dst, "Target", string(s.Target))
	dst = appendBool(dst, "AtAll", s.AtAll)
	dst = appendString(dst, "Name", s.Name)
	dst = appendString(dst, "URL", s.URL)
	dst = appendString(dst, "ID", s.ID)
	dst = appendString(dst, "Type", s.Type)
	if s.Forward != nil {
		dst = appendKey(dst, ',', "Forward")
		for i := range s.Forward {
			dst = append(dst, "[,"[min(i, 1)])
			var ok bool
			if dst, ok = s.Forward[i].appendJSON(dst); !ok {
				return dst, false
			}
		}
		dst = closeArray(dst, len(s.Forward))
	}
	if len(dst) > start {
		dst = append(dst[:start], dst[start+1:]...) // the first field's comma
	}
	return append(dst, '}'), true
}

// appendKey appends sep and "key":.
func appendKey(dst []byte, sep byte, key string) []byte {
	dst = append(dst, sep, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendString appends ,"key":"v" unless v is empty (omitzero).
func appendString(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return jsonstr.Append(appendKey(dst, ',', key), v, true)
}

// appendBool appends ,"key":true when v is (omitzero).
func appendBool(dst []byte, key string, v bool) []byte {
	if !v {
		return dst
	}
	return append(appendKey(dst, ',', key), "true"...)
}

// appendStrings appends ,"key":[…] unless vs is nil (omitzero: an empty
// slice that is not nil is written as []).
func appendStrings[S ~string](dst []byte, key string, vs []S) []byte {
	if vs == nil {
		return dst
	}
	dst = appendKey(dst, ',', key)
	for i, v := range vs {
		dst = append(dst, "[,"[min(i, 1)])
		dst = jsonstr.Append(dst, string(v), true)
	}
	return closeArray(dst, len(vs))
}

// closeArray ends an array of n elements, whose opening bracket the
// first element wrote; an empty one is [] whole.
func closeArray(dst []byte, n int) []byte {
	if n == 0 {
		return append(dst, "[]"...)
	}
	return append(dst, ']')
}
