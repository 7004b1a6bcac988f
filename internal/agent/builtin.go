package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
)

// CurrentTime is a tool that tells the model the date and time in loc, for
// questions the envelope's timestamp does not settle ("what day is next
// Friday?").
func CurrentTime(loc *time.Location) Tool {
	if loc == nil {
		loc = time.Local
	}
	return Tool{
		Spec: llm.Tool{
			Name:        "current_time",
			Description: "Returns the current date, weekday and time with the timezone.",
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{}},
		},
		Call: func(context.Context, json.RawMessage) (string, error) {
			return time.Now().In(loc).Format("Monday 2006-01-02 15:04:05 MST (UTC-07:00)"), nil
		},
	}
}
