package store

import (
	"encoding/json"
	"fmt"
)

// The stores keep some values as JSON text in a column of their own; the
// functions below are that form, the same for every store.

// TurnColumns encodes the JSON columns of t: its tool calls and its
// images, each "" when there are none.
func TurnColumns(t Turn) (calls, images string, err error) {
	if len(t.ToolCalls) > 0 {
		b, err := json.Marshal(t.ToolCalls)
		if err != nil {
			return "", "", err
		}
		calls = string(b)
	}
	if len(t.Images) > 0 {
		b, err := json.Marshal(t.Images)
		if err != nil {
			return "", "", err
		}
		images = string(b)
	}
	return calls, images, nil
}

// ReadTurnColumns sets t's tool calls and images from their columns (see
// TurnColumns).
func ReadTurnColumns(t *Turn, calls, images string) error {
	if calls != "" {
		if err := json.Unmarshal([]byte(calls), &t.ToolCalls); err != nil {
			return fmt.Errorf("turn %d tool calls: %w", t.Seq, err)
		}
	}
	if images != "" {
		if err := json.Unmarshal([]byte(images), &t.Images); err != nil {
			return fmt.Errorf("turn %d images: %w", t.Seq, err)
		}
	}
	return nil
}

// SessionOptions reads a session's options column: a JSON object, "{}"
// for most sessions, which is not decoded.
func SessionOptions(column string) (map[string]string, error) {
	opts := map[string]string{}
	if column == "{}" {
		return opts, nil
	}
	if err := json.Unmarshal([]byte(column), &opts); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	if opts == nil { // the column said null
		opts = map[string]string{}
	}
	return opts, nil
}

// BufferedBodies encodes the message of each entry as its body column;
// a message in several buffers in a row is encoded once.
func BufferedBodies(entries []Buffered) ([]string, error) {
	bodies := make([]string, len(entries))
	for i, e := range entries {
		if i > 0 && e.Message.ID == entries[i-1].Message.ID && e.Message.Peer == entries[i-1].Message.Peer {
			bodies[i] = bodies[i-1]
			continue
		}
		b, err := json.Marshal(e.Message)
		if err != nil {
			return nil, fmt.Errorf("buffer %s: %w", e.Message.ID, err)
		}
		bodies[i] = string(b)
	}
	return bodies, nil
}
