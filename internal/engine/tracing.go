package engine

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
)

// deliveries collects what a turn sent and what it held back, for its
// trace. Deliveries run on the dispatcher's goroutine, skips on the
// normalizer's: both lock.
type deliveries struct {
	mu      sync.Mutex
	ids     []msg.MessageID
	errs    []string
	skipped []string
}

func (d *deliveries) add(id msg.MessageID, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.errs = append(d.errs, err.Error())
		return
	}
	d.ids = append(d.ids, id)
}

func (d *deliveries) skip(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.skipped = append(d.skipped, reason)
}

// step is the turn's delivery step: its verdict and what was sent (chunk
// count and message ids), or why nothing was.
func (d *deliveries) step(outcome string, runErr error) (verdict, detail string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var parts []string
	if n := len(d.ids); n > 0 {
		ids := make([]string, 0, n)
		for _, id := range d.ids {
			if id != "" {
				ids = append(ids, string(id))
			}
		}
		part := fmt.Sprintf("%d message(s) sent", n)
		if len(ids) > 0 {
			part += " (" + strings.Join(ids, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(d.errs) > 0 {
		parts = append(parts, fmt.Sprintf("%d not delivered: %s", len(d.errs), strings.Join(d.errs, "; ")))
	}
	for _, reason := range d.skipped {
		parts = append(parts, "held back: "+skipText(reason))
	}
	switch outcome {
	case "replied":
		verdict = "sent"
	case "undelivered":
		verdict = "not delivered"
	case "silent":
		verdict = "no reply"
		parts = append(parts, "the model answered NO_REPLY (stay silent)")
	case "stopped":
		verdict = "stopped"
		parts = append(parts, "the turn was stopped before it finished")
	case "failed":
		verdict = "failed"
		parts = append(parts, "the model run failed: "+runErr.Error())
	case "cut":
		verdict = "cut"
		parts = append(parts, "shutdown cut the turn; it is resumed after the restart")
	default:
		verdict = "no reply"
		if len(d.skipped) == 0 {
			parts = append(parts, "the model's answer was empty")
		}
	}
	return verdict, strings.Join(parts, "; ")
}

// skipText explains a reply.SkipReason.
func skipText(reason string) string {
	switch reply.SkipReason(reason) {
	case reply.SkipSilent:
		return "the answer was NO_REPLY (stay silent)"
	case reply.SkipHeartbeat:
		return "a heartbeat answered HEARTBEAT_OK"
	case reply.SkipEmpty:
		return "the answer was empty"
	case reply.SkipReasoning:
		return "only reasoning, no answer"
	case reply.SkipDuplicate:
		return "the same text was already sent"
	}
	return reason
}

// agentStep describes a turn's agent run: the model that answered (and
// the ones tried before it), tokens and time.
func agentStep(chain []llm.Ref, out agent.Output, runErr error, took time.Duration) string {
	var b strings.Builder
	switch {
	case out.Model != (llm.Ref{}) && runErr == nil:
		fmt.Fprintf(&b, "%s answered", out.Model)
	case out.Model != (llm.Ref{}):
		fmt.Fprintf(&b, "%s failed last", out.Model)
	default:
		b.WriteString("no model ran")
	}
	if tried := fallbacks(chain, out.Model); len(tried) > 0 {
		fmt.Fprintf(&b, " after %s", strings.Join(tried, ", "))
	}
	fmt.Fprintf(&b, " in %d ms", took.Milliseconds())
	if u := out.Usage; u.InputTokens > 0 || u.OutputTokens > 0 {
		fmt.Fprintf(&b, "; %d tokens in, %d out", u.InputTokens, u.OutputTokens)
	}
	return b.String()
}

// fallbacks lists the models of chain before used: they were tried and
// failed.
func fallbacks(chain []llm.Ref, used llm.Ref) []string {
	var tried []string
	for _, r := range chain {
		if r == used {
			return tried
		}
		tried = append(tried, r.String())
	}
	return nil
}
