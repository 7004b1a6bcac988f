package config

import "errors"

// Limits caps what people and chats may spend: the turns they start and
// the model tokens those turns use. A turn over a limit makes no model
// call. It is a plain value so that a chat's resolved settings can carry
// their own.
type Limits struct {
	// PerUser applies to each person, across the chats they write in.
	PerUser Limit `json:"perUser"`
	// PerChat applies to each chat (a group, or a direct chat), everyone
	// in it together.
	PerChat Limit `json:"perChat"`
}

// Limit is one set of caps; 0 means no cap.
type Limit struct {
	// MessagesPerMinute is how many turns may be started within a minute
	// (counted from the first of them).
	MessagesPerMinute int `json:"messagesPerMinute"`
	// TokensPerDay is how many model tokens, input and output together,
	// may be used in a day, a day in agents.defaults.envelope.timezone.
	TokensPerDay int64 `json:"tokensPerDay"`
}

// Zero reports whether l caps nothing.
func (l Limit) Zero() bool { return l.MessagesPerMinute == 0 && l.TokensPerDay == 0 }

// Zero reports whether l caps nothing.
func (l Limits) Zero() bool { return l.PerUser.Zero() && l.PerChat.Zero() }

// Validate checks the limits section.
func (l Limits) Validate() error {
	return errors.Join(nest("perUser", l.PerUser.Validate()), nest("perChat", l.PerChat.Validate()))
}

// Validate checks one set of caps.
func (l Limit) Validate() error {
	var errs []error
	if l.MessagesPerMinute < 0 {
		errs = append(errs, problem("messagesPerMinute", "must not be negative (0 means no limit), got %d", l.MessagesPerMinute))
	}
	if l.TokensPerDay < 0 {
		errs = append(errs, problem("tokensPerDay", "must not be negative (0 means no limit), got %d", l.TokensPerDay))
	}
	return errors.Join(errs...)
}
