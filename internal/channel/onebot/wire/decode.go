package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// largeFrame is the size from which a frame is decoded without copying
// its message (decodeLarge); smaller ones take the fast decoder.
const largeFrame = 64 << 10

// CopiedBelow is the size under which decoding a frame copies everything
// the event keeps: the frame's buffer may be reused once the event was
// decoded. A larger frame's event may point into it.
const CopiedBelow = largeFrame

// probe is what a frame is decoded into: an event, or the fields of an
// action's answer (whose failure text is in the event's Message).
type probe struct {
	Event
	Echo    json.RawMessage `json:"echo"`
	Status  json.RawMessage `json:"status"`
	Retcode json.RawMessage `json:"retcode"`
	Data    json.RawMessage `json:"data"`
	Wording json.RawMessage `json:"wording"`
	Msg     json.RawMessage `json:"msg"`
}

// Classify decodes a frame once: an action's answer (it has an echo,
// status or retcode and no post_type), or an event, returned decoded (nil
// when the frame is not a JSON object). The message of an event from a
// large frame is not copied: it stays a sub-slice of frame (see
// DecodeEvent).
func Classify(frame []byte) (ev *Event, response bool) {
	ev, resp := Decode(frame)
	return ev, resp != nil
}

// Decode is Classify that decodes an action's answer too, from the same
// reading of the frame: ev is the event, or resp the answer (its Data
// does not point into frame); both are nil when the frame is neither.
func Decode(frame []byte) (ev *Event, resp *Response) {
	if len(frame) < largeFrame && beginsLikeAnswer(frame) {
		if r, ok := decodeAnswer(frame); ok {
			return nil, &r
		}
	}
	var p probe
	if len(frame) >= largeFrame {
		var err error
		if p, err = decodeLarge(frame); err != nil {
			return nil, nil
		}
	} else if fast, ok := decodeFast(frame); ok {
		p = fast
	} else if p, ok = decodeStd(frame); !ok {
		return nil, nil
	}
	if p.PostType == "" && (p.Echo != nil || p.Status != nil || p.Retcode != nil) {
		if len(frame) >= largeFrame {
			// A large frame's probe leaves its message out: the answer is
			// read as a whole.
			var r Response
			if json.Unmarshal(frame, &r) != nil {
				return nil, nil
			}
			return nil, &r
		}
		r, ok := p.response()
		if !ok {
			return nil, nil
		}
		return nil, &r
	}
	// The event alone goes to the heap, not the probe around it.
	ev = new(Event)
	*ev = p.Event
	return ev, nil
}

// decodeStd decodes a frame the fast decoder would not with
// encoding/json; apart from Decode, whose probe then stays on its stack.
func decodeStd(frame []byte) (probe, bool) {
	var p probe
	if json.Unmarshal(frame, &p) != nil {
		return probe{}, false
	}
	return p, true
}

// response is the answer a probe holds (see answerFrom).
func (p *probe) response() (Response, bool) {
	if p.decoded {
		return Response{}, false // a message of segments is no failure text
	}
	return answerFrom(p.Status, p.Retcode, p.Message, p.Wording, p.Msg, p.Data, p.Echo)
}

// decodeLarge decodes a frame with encoding/json, which copies no more of
// it than the fields it fills, and leaves message and raw_message encoded
// where they are: an event's Message is a sub-slice of frame, and its
// raw_message is kept for ToMessage to read if it must.
func decodeLarge(frame []byte) (probe, error) {
	var p struct {
		probe
		// These shadow the event's fields of the same names, and an
		// answer's data (an answer is read whole, by Decode).
		Message    skipped       `json:"message"`
		RawMessage skippedString `json:"raw_message"`
		Data       skipped       `json:"data"`
	}
	if err := json.Unmarshal(frame, &p); err != nil {
		return probe{}, fmt.Errorf("onebot: event: %w", err)
	}
	if p.PostType != "" {
		p.Event.Message = member(frame, "message")
		if raw := member(frame, "raw_message"); !bytes.Equal(raw, []byte("null")) {
			p.Event.rawMessage = raw
		}
	}
	return p.probe, nil
}

// skipped takes any JSON value and keeps none of it.
type skipped struct{}

func (skipped) UnmarshalJSON([]byte) error { return nil }

// skippedString takes a JSON string (or null) and keeps none of it;
// anything else is an error, as it is for a string field.
type skippedString struct{}

func (skippedString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '"' || b[0] == 'n') {
		return nil
	}
	return errRawMessage
}

var errRawMessage = errors.New("onebot: raw_message is not a string")

// segments are a message's segments, read one at a time: from a list, or
// from an encoded segment array (streamSegments).
type segments struct {
	list  []Segment
	array elements
}

// left is how many segments next is known to return still (those of a
// streamed array are not counted).
func (s *segments) left() int { return len(s.list) }

// next returns the next segment, false when there is none.
func (s *segments) next() (Segment, bool) {
	if len(s.list) > 0 {
		seg := s.list[0]
		s.list = s.list[1:]
		return seg, true
	}
	for {
		elem, ok := s.array.next()
		if !ok {
			return Segment{}, false
		}
		if seg, ok := segmentOf(elem); ok {
			return seg, true
		}
	}
}

// segmentsOf reads a message field as parseMessage does (a segment array,
// one segment, or a CQ-code string). A large one is read one segment at a
// time (streamSegments), so that the reader may stop early and no text is
// copied whole. A CQ-code string is cut to about limit characters first
// (cut reports that it was).
func segmentsOf(raw json.RawMessage, limit int) (segs segments, cut bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return segments{}, false, fmt.Errorf("onebot: message string: %w", err)
		}
		s, cut = cutCQ(s, limit)
		return segments{list: parseCQ(s)}, cut, nil
	}
	if len(raw) >= largeFrame {
		segs, err := streamSegments(raw)
		return segs, false, err
	}
	all, err := parseMessage(raw, true) // an event's Message is valid JSON
	return segments{list: all}, false, err
}

// streamSegments reads a segment array, or one segment, as parseMessage
// does (but with encoding/json throughout), one segment at a time; a text
// segment's text is left encoded where it is, for textPrefix.
func streamSegments(raw json.RawMessage) (segments, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return segments{}, nil
	}
	if !json.Valid(raw) {
		return segments{}, fmt.Errorf("onebot: message: %w", errBadMessage)
	}
	switch raw[0] {
	case '[':
		return segments{array: newElements(raw)}, nil
	case '{':
		if seg, ok := segmentOf(raw); ok {
			return segments{list: []Segment{seg}}, nil
		}
	}
	return segments{}, errBadMessage
}

// segmentOf decodes one element of a segment array (valid JSON) as
// encoding/json would, false when it is not a segment. A text segment
// keeps its text encoded: a sub-slice of elem.
func segmentOf(elem []byte) (Segment, bool) {
	var typ, data []byte
	fields := 0
	for key, value := range members(elem) {
		switch {
		case keyIs(key, "type", true):
			typ, fields = value, fields+1
		case keyIs(key, "data", true):
			data, fields = value, fields+1
		}
	}
	// A repeated field is left to encoding/json, which merges data objects.
	if fields == 2 && string(typ) == `"text"` && len(data) > 0 && data[0] == '{' {
		var text []byte
		for key, value := range members(data) {
			if keyIs(key, "text", false) {
				text = value
			}
		}
		seg := Segment{Type: "text", Data: Fields{}}
		if text != nil {
			seg.Data = Fields{{Key: "text", Value: text}}
		}
		return seg, true
	}
	var seg Segment
	if json.Unmarshal(elem, &seg) != nil || seg.Type == "" {
		return Segment{}, false
	}
	return seg, true
}
