package feishusim

import (
	"net/http"
	"sync"
)

// holds are requests to keep waiting, as a slow platform does: by fault
// key (see QueueFault), each the channels the next requests wait on.
type holds struct {
	mu   sync.Mutex
	next map[string][]chan struct{}
}

// Hold makes the next request to key (a path, or a method and a path, as
// QueueFault takes) wait until release is called, and then be answered as
// usual: a slow open platform. Release may be called more than once.
func (s *Sim) Hold(key string) (release func()) {
	key = normalizeFaultKey(key)
	ch := make(chan struct{})
	s.holds.mu.Lock()
	if s.holds.next == nil {
		s.holds.next = map[string][]chan struct{}{}
	}
	s.holds.next[key] = append(s.holds.next[key], ch)
	s.holds.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// wait keeps r waiting while a Hold of its key is not released (or until
// its client gives up).
func (h *holds) wait(r *http.Request) {
	h.mu.Lock()
	var ch chan struct{}
	for _, key := range []string{r.Method + " " + r.URL.Path, r.URL.Path} {
		if q := h.next[key]; len(q) > 0 {
			ch, h.next[key] = q[0], q[1:]
			break
		}
	}
	h.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-r.Context().Done():
	}
}
