// Package webchattest is a client of the web chat's HTTP API for tests,
// benchmarks and the load tool: it posts messages and reads the server-sent
// events of the reply.
package webchattest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"time"
)

// Event is one server-sent event.
type Event struct {
	Name string
	Data map[string]any
	// At is when the event was read.
	At time.Time
}

// Client is one browser: it keeps the browser cookie across calls.
type Client struct {
	Base  string
	HTTP  *http.Client
	Token string
}

// New returns a Client for the gateway at base with its own cookie jar.
func New(base string) *Client {
	jar, _ := cookiejar.New(nil) // never fails without options
	return &Client{Base: strings.TrimSuffix(base, "/"), HTTP: &http.Client{Jar: jar}}
}

func (c *Client) do(req *http.Request) (*http.Response, error) {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return c.HTTP.Do(req)
}

// Session returns the decoded GET /api/session answer.
func (c *Client) Session() (map[string]any, error) {
	req, err := http.NewRequest(http.MethodGet, c.Base+"/api/session", nil)
	if err != nil {
		return nil, err
	}
	res, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return nil, fmt.Errorf("session: %s: %s", res.Status, b)
	}
	var v map[string]any
	return v, json.NewDecoder(res.Body).Decode(&v)
}

// Post sends text (with an optional idempotency id) and returns the
// response; read it with Events. start is when the request was sent.
func (c *Client) Post(text, id string) (res *http.Response, start time.Time, err error) {
	body, _ := json.Marshal(map[string]string{"text": text, "id": id})
	req, err := http.NewRequest(http.MethodPost, c.Base+"/api/messages", bytes.NewReader(body))
	if err != nil {
		return nil, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start = time.Now()
	res, err = c.do(req)
	return res, start, err
}

// Events reads every event of a reply stream until it ends.
func Events(res *http.Response) ([]Event, error) {
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return nil, fmt.Errorf("post: %s: %s", res.Status, b)
	}
	var out []Event
	err := Read(res.Body, func(e Event) bool { out = append(out, e); return true })
	return out, err
}

// Read parses an event stream, calling fn for each event until fn returns
// false or the stream ends.
func Read(r io.Reader, fn func(Event) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Name != "" {
				ev.At = time.Now()
				if !fn(ev) {
					return nil
				}
			}
			ev = Event{}
		case strings.HasPrefix(line, "event: "):
			ev.Name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[len("data: "):]), &ev.Data); err != nil {
				return fmt.Errorf("event %s: %w", ev.Name, err)
			}
		}
	}
	return sc.Err()
}

// Text joins the text of every event called name.
func Text(events []Event, name string) string {
	var b strings.Builder
	for _, e := range events {
		if e.Name == name {
			if s, ok := e.Data["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}
