package wire

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Request is an action sent over a WebSocket: its echo comes back in the
// answer. Its fields encode in the order a map of them would (action,
// echo, params). Over the HTTP API only the params are sent.
type Request struct {
	Action string `json:"action"`
	Echo   string `json:"echo"`
	Params any    `json:"params"`
}

// Response is an action's answer.
type Response struct {
	Status  string          `json:"status"`
	Retcode int             `json:"retcode"`
	Data    json.RawMessage `json:"data"`
	Echo    json.RawMessage `json:"echo"`
	// Message, Wording and Msg carry failure text on go-cqhttp and NapCat.
	Message string `json:"message"`
	Wording string `json:"wording"`
	Msg     string `json:"msg"`
}

// Retcodes with a meaning of their own.
const (
	retcodeOK = 0
	// RetcodeRiskControl is NapCat's action exception, usually a send
	// blocked by QQ's risk control.
	RetcodeRiskControl = 1200
	// RetcodeUnsupported is the spec's "no such action" (the HTTP API's
	// 404 reads as it too).
	RetcodeUnsupported = 1404
)

// ActionError is a failed action.
type ActionError struct {
	Action  string
	Retcode int
	Status  string
	Message string
}

// Error names the action, its retcode and the failure text, if any.
func (e *ActionError) Error() string {
	s := fmt.Sprintf("onebot: %s failed: retcode %d", e.Action, e.Retcode)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// ErrRiskControl matches action errors that look like QQ risk control;
// the caller should back off sending for the account, not retry.
var ErrRiskControl = errors.New("onebot: probable risk control")

// Is lets errors.Is(err, ErrRiskControl) match.
func (e *ActionError) Is(target error) bool {
	return target == ErrRiskControl && e.Retcode == RetcodeRiskControl
}

// Result is the data of a successful answer to action, else an
// *ActionError.
func (r Response) Result(action string) (json.RawMessage, error) {
	if r.Status == "ok" || r.Status == "async" || (r.Status == "" && r.Retcode == retcodeOK) {
		return r.Data, nil
	}
	text := r.Message
	for _, alt := range []string{r.Wording, r.Msg} {
		if text == "" {
			text = alt
		}
	}
	return nil, &ActionError{Action: action, Retcode: r.Retcode, Status: r.Status, Message: text}
}
