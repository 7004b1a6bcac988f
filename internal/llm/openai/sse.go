package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// sseDecoder reads server-sent events as the SDK's own decoder does
// (events dispatched on a blank line, data lines joined with newlines,
// comments skipped, CRLF accepted), with its read buffer taken from a pool
// and given back on Close instead of a new scanner buffer per call.
type sseDecoder struct {
	rc   io.ReadCloser
	r    *bufio.Reader
	evt  ssestream.Event
	data []byte
	long []byte // a line longer than the read buffer
	err  error
}

// maxSSELine bounds one line of a stream.
const maxSSELine = 4 << 20

var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// newSSEDecoder returns a decoder of res's body; nil when there is none,
// as ssestream.NewDecoder.
func newSSEDecoder(res *http.Response) ssestream.Decoder {
	if res == nil || res.Body == nil {
		return nil
	}
	r := sseReaders.Get().(*bufio.Reader)
	r.Reset(res.Body)
	return &sseDecoder{rc: res.Body, r: r}
}

// Next implements ssestream.Decoder.
func (d *sseDecoder) Next() bool {
	if d.err != nil || d.r == nil {
		return false
	}
	event := ""
	d.data = d.data[:0]
	for {
		line, err := d.line()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				d.err = err
			}
			return false
		}
		if len(line) == 0 {
			if len(d.data) == 0 {
				event = ""
				continue
			}
			d.evt = ssestream.Event{Type: event, Data: d.data}
			return true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			d.data = append(d.data, value...)
			d.data = append(d.data, '\n')
		}
	}
}

// line returns the next line without its end; it is valid until the next
// call. A last line without an end is returned before io.EOF.
func (d *sseDecoder) line() ([]byte, error) {
	d.long = d.long[:0]
	for {
		chunk, err := d.r.ReadSlice('\n')
		switch {
		case err == nil:
			if len(d.long) > 0 {
				d.long = append(d.long, chunk...)
				chunk = d.long
			}
			chunk = bytes.TrimSuffix(chunk[:len(chunk)-1], []byte("\r"))
			return chunk, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(d.long)+len(chunk) > maxSSELine {
				return nil, errors.New("openai: a line of the stream is longer than 4 MiB")
			}
			d.long = append(d.long, chunk...)
		case errors.Is(err, io.EOF) && len(chunk)+len(d.long) > 0:
			d.long = append(d.long, chunk...)
			return bytes.TrimSuffix(d.long, []byte("\r")), nil
		default:
			return nil, err
		}
	}
}

// Event implements ssestream.Decoder; its data is valid until Next.
func (d *sseDecoder) Event() ssestream.Event { return d.evt }

// Close implements ssestream.Decoder: the body is closed and the read
// buffer goes back to the pool. It may be called more than once.
func (d *sseDecoder) Close() error {
	if d.r != nil {
		d.r.Reset(nil)
		sseReaders.Put(d.r)
		d.r = nil
	}
	return d.rc.Close()
}

// Err implements ssestream.Decoder.
func (d *sseDecoder) Err() error { return d.err }
