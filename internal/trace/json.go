package trace

import (
	"github.com/pincerbot/pincer/internal/jsonstr"
)

// AppendJSON appends k's JSON to dst: the very bytes json.Marshal writes
// for it (FuzzTraceJSON holds the two together), without reflection.
func (k Key) AppendJSON(dst []byte) []byte {
	dst = jsonstr.Append(append(dst, `{"channel":`...), string(k.Channel), true)
	dst = jsonstr.Append(append(dst, `,"account":`...), string(k.Account), true)
	dst = jsonstr.Append(append(dst, `,"peer":{"Kind":`...), string(k.Peer.Kind), true)
	dst = jsonstr.Append(append(dst, `,"ID":`...), k.Peer.ID, true)
	dst = jsonstr.Append(append(dst, `},"id":`...), string(k.ID), true)
	return append(dst, '}')
}

// AppendStepsJSON appends the JSON of steps to dst: the very bytes
// json.Marshal writes for them, without reflection, as a record is
// stored anew with each step that follows its first settled one. A step
// json.Marshal refuses (a time past the year 9999) is its error, and dst
// is returned as it was.
func AppendStepsJSON(dst []byte, steps []Step) ([]byte, error) {
	if steps == nil {
		return append(dst, "null"...), nil
	}
	start := len(dst)
	dst = append(dst, '[')
	for i, s := range steps {
		if i > 0 {
			dst = append(dst, ',')
		}
		at, err := s.At.AppendText(append(dst, `{"at":"`...))
		if err != nil {
			return dst[:start], err
		}
		dst = jsonstr.Append(append(at, `","stage":`...), s.Stage, true)
		if s.Outcome != "" {
			dst = jsonstr.Append(append(dst, `,"outcome":`...), s.Outcome, true)
		}
		dst = jsonstr.Append(append(dst, `,"detail":`...), s.Detail, true)
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}
