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
	// after lists the other settings the problem was found from, relative
	// to the same section as Path; rooted lists them as full key paths.
	// Parse leaves out a problem when one of these or Path itself could
	// not be decoded, since it would then only repeat that.
	after  []string
	rooted []string
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

// crossProblem is a problem at path found by comparing it with the
// settings at after (relative to the same section), such as maxMs with
// minMs.
func crossProblem(path string, after []string, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...), after: after}
}

// nest prefixes the paths of every FieldError in err with base.
func nest(base string, err error) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range Problems(err) {
		if fe, ok := e.(*FieldError); ok {
			after := make([]string, len(fe.after))
			for i, a := range fe.after {
				after[i] = under(base, a)
			}
			out = append(out, &FieldError{Path: under(base, fe.Path), Msg: fe.Msg, after: after, rooted: fe.rooted})
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", base, e))
	}
	return errors.Join(out...)
}

// under places the key path p inside base.
func under(base, p string) string {
	switch {
	case p == "":
		return base
	case strings.HasPrefix(p, "["):
		return base + p
	}
	return base + "." + p
}

// within reports whether key path p is inside (or is) the key path outer.
func within(p, outer string) bool {
	rest, ok := strings.CutPrefix(p, outer)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// follows reports whether the problem concerns a setting at or inside one
// of the key paths in skipped, whose values were not decoded.
func (e *FieldError) follows(skipped []string) bool {
	for _, s := range skipped {
		if within(e.Path, s) || slices.ContainsFunc(e.after, func(a string) bool { return within(a, s) }) ||
			slices.ContainsFunc(e.rooted, func(a string) bool { return within(a, s) }) {
			return true
		}
	}
	return false
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
