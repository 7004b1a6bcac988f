package store

import (
	"context"
	"errors"
	"sync/atomic"
)

// WriteHealth remembers whether a store's latest write failed, for its
// Health. NoRows is its driver's "no such row" error, a job's outcome
// rather than a failure of the store, as is a cancelled context.
type WriteHealth struct {
	NoRows error
	err    atomic.Pointer[error]
}

// Failed records err, unless it is nil or an outcome (see WriteHealth).
func (h *WriteHealth) Failed(err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, h.NoRows) {
		h.err.Store(&err)
	}
}

// OK records a write that succeeded.
func (h *WriteHealth) OK() { h.err.Store(nil) }

// Last is the failure of the latest write, nil when it succeeded.
func (h *WriteHealth) Last() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}
