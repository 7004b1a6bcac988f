package feishusim

import (
	"net/http"
	"strconv"
	"strings"
)

// Error codes the simulator answers with, as the platform does.
const (
	CodeOK               = 0        // success
	CodeInvalidParam     = 230001   // invalid parameter
	CodeBotNotInChat     = 230002   // the bot is not in the chat
	CodeUserUnavailable  = 230013   // the bot is not available to the user
	CodeRecalled         = 230011   // the target message was recalled
	CodeIMRateLimited    = 230020   // IM rate limit (5 sends/s per chat)
	CodeContentTooLong   = 230025   // message content too long
	CodeNoPermission     = 230027   // missing permission
	CodeInvisible        = 230050   // message invisible to the caller
	CodeDeleted          = 230110   // message deleted, or unknown
	CodeReplyUnavailable = 231003   // reply target unavailable
	CodeUploadInvalid    = 234001   // upload: invalid request param
	CodeFileNotInMessage = 234003   // resource not in the message
	CodeUploadTooLarge   = 234006   // upload: over the size limit
	CodeUploadEmpty      = 234010   // upload: an empty image or file
	CodeRateLimited      = 99991400 // API rate limit (HTTP 429)
	CodeTokenMissing     = 99991661 // no access token
	CodeTokenInvalid     = 99991663 // invalid or expired tenant token
	CodeFieldValidation  = 99992402 // request field validation failed
	CodeAppIDInvalid     = 10003    // token request: unknown app_id
	CodeAppSecretInvalid = 10014    // token request: wrong app_secret
	CodeInternalError    = 1        // the simulator failed
)

// What a 99991400 answer's x-ogw-ratelimit headers say unless a Fault
// sets them.
const (
	rateLimitResetSeconds   = 1
	rateLimitLimitPerSecond = 50
)

// Fault is a scripted answer to one request, returned instead of the
// simulator's own.
type Fault struct {
	// Code and Msg make the JSON body {code, msg}. Msg empty means a
	// message the simulator knows for Code.
	Code int
	Msg  string
	// Status is the HTTP status; zero means 429 for 99991400 and 400
	// otherwise.
	Status int
	// Header is added to the answer, e.g. x-ogw-ratelimit-reset. Zero for
	// 99991400 means x-ogw-ratelimit-limit 50 and x-ogw-ratelimit-reset 1.
	Header http.Header
	// Body, when not nil, is sent as is instead of JSON (an HTML error
	// page from a proxy, say), with Header's Content-Type or text/plain.
	Body []byte
}

// RateLimited is the platform's throttling answer: HTTP 429, code
// 99991400 and x-ogw-ratelimit-reset set to resetSeconds.
func RateLimited(resetSeconds int) Fault {
	h := http.Header{}
	h.Set("x-ogw-ratelimit-limit", strconv.Itoa(rateLimitLimitPerSecond))
	h.Set("x-ogw-ratelimit-reset", strconv.Itoa(resetSeconds))
	return Fault{Code: CodeRateLimited, Status: http.StatusTooManyRequests, Header: h}
}

// FailNext makes the next request to key answer with code (see
// QueueFault for keys): FailNext("/open-apis/im/v1/messages/om_x", 230027).
func (s *Sim) FailNext(key string, code int) {
	s.QueueFault(key, Fault{Code: code})
}

// QueueFault appends f to key's queue: each request matching key takes
// the next fault instead of its normal answer until the queue is empty.
// A key is a URL path ("/open-apis/im/v1/messages/om_x/reply") or a
// method and a path ("POST /open-apis/im/v1/messages"); the
// method-qualified queue is used first; a query string in key is
// ignored. Faults apply after the token
// check, so a request with a bad token still fails with 99991663.
func (s *Sim) QueueFault(key string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key = normalizeFaultKey(key)
	s.faults[key] = append(s.faults[key], f)
}

// ClearFaults drops every queued fault.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

func normalizeFaultKey(key string) string {
	key, _, _ = strings.Cut(strings.TrimSpace(key), "?")
	if method, path, ok := strings.Cut(key, " "); ok {
		return strings.ToUpper(method) + " " + strings.TrimSpace(path)
	}
	return key
}

// popFaultLocked takes the next fault queued for the request, if any.
func (s *Sim) popFaultLocked(method, path string) (Fault, bool) {
	for _, key := range []string{method + " " + path, path} {
		q := s.faults[key]
		if len(q) == 0 {
			continue
		}
		f := q[0]
		if len(q) == 1 {
			delete(s.faults, key)
		} else {
			s.faults[key] = q[1:]
		}
		return f, true
	}
	return Fault{}, false
}

func (f Fault) answer() *answer {
	status := f.Status
	if status == 0 {
		status = http.StatusBadRequest
		if f.Code == CodeRateLimited {
			status = http.StatusTooManyRequests
		}
	}
	h := f.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if f.Code == CodeRateLimited && h.Get("x-ogw-ratelimit-reset") == "" {
		h.Set("x-ogw-ratelimit-limit", strconv.Itoa(rateLimitLimitPerSecond))
		h.Set("x-ogw-ratelimit-reset", strconv.Itoa(rateLimitResetSeconds))
	}
	if f.Body != nil {
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "text/plain; charset=utf-8")
		}
		return &answer{status: status, header: h, raw: f.Body}
	}
	msg := f.Msg
	if msg == "" {
		msg = codeText(f.Code)
	}
	a := fail(status, f.Code, msg)
	a.header = h
	return a
}

// codeText is the message the simulator sends with a code.
func codeText(code int) string {
	switch code {
	case CodeOK:
		return "success"
	case CodeInvalidParam:
		return "The request you send is not a valid {receive_id} or {message_id}."
	case CodeBotNotInChat:
		return "Bot/User can NOT be out of the chat."
	case CodeUserUnavailable:
		return "Bot has NO availability to this user."
	case CodeRecalled:
		return "The message has been recalled."
	case CodeIMRateLimited:
		return "The request you send is under rate limit."
	case CodeContentTooLong:
		return "The content of the message is too long."
	case CodeNoPermission:
		return "Lack of necessary permissions."
	case CodeInvisible:
		return "The message is invisible to the operator."
	case CodeDeleted:
		return "The message has been deleted."
	case CodeReplyUnavailable:
		return "The message to reply is unavailable."
	case CodeFileNotInMessage:
		return "File not in msg."
	case CodeUploadInvalid:
		return "Invalid request param."
	case CodeUploadTooLarge:
		return "The file size exceed the max value."
	case CodeUploadEmpty:
		return "File's size can't be 0."
	case CodeRateLimited:
		return "request trigger frequency limit"
	case CodeTokenMissing:
		return "Missing access token for authorization. Please make a request with token attached."
	case CodeTokenInvalid:
		return "Invalid access token for authorization. Please make a request with token attached."
	case CodeFieldValidation:
		return "field validation failed"
	case CodeAppIDInvalid:
		return "invalid param"
	case CodeAppSecretInvalid:
		return "app secret invalid"
	default:
		return "simulated error"
	}
}
