package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ID is a OneBot id (message, user, group, self). Implementations send
// int64 numbers, negative numbers and numeric strings; all decode.
type ID int64

// UnmarshalJSON accepts a JSON number or a string holding one; null and ""
// leave zero.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			return nil
		}
		b = []byte(s)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		// Some implementations send floats such as 1.7e9 for times.
		f, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || f != float64(int64(f)) {
			return fmt.Errorf("onebot: id %s is not an integer", b)
		}
		n = int64(f)
	}
	*id = ID(n)
	return nil
}

// MarshalJSON writes the id as a JSON number.
func (id ID) MarshalJSON() ([]byte, error) { return strconv.AppendInt(nil, int64(id), 10), nil }

// String is the id in decimal.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// LenientID reads an id that may be a number, a numeric string or
// anything else (0).
func LenientID(raw json.RawMessage) ID {
	var id ID
	if len(raw) > 0 && id.UnmarshalJSON(raw) != nil {
		return 0
	}
	return id
}
