package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// FieldError is one configuration problem at a key path such as
// "channels.webchat.title".
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func problem(path, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// nest prefixes the paths of every FieldError in err with base.
func nest(base string, err error) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range Problems(err) {
		if fe, ok := e.(*FieldError); ok {
			p := base
			if fe.Path != "" {
				if strings.HasPrefix(fe.Path, "[") {
					p += fe.Path
				} else {
					p += "." + fe.Path
				}
			}
			out = append(out, &FieldError{Path: p, Msg: fe.Msg})
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", base, e))
	}
	return errors.Join(out...)
}

// Problems flattens a joined error into its individual problems.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	return []error{err}
}

// sortProblems orders problems by path so reports are stable.
func sortProblems(errs []error) []error {
	slices.SortStableFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// oneOf reports a value outside its allowed set, or nil.
func oneOf(path, got string, allowed ...string) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	want := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	return problem(path, "want %s, got %q", want, got)
}
