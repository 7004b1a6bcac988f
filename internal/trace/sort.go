package trace

import "slices"

func sortNewestFirst(recs []Record) {
	slices.SortStableFunc(recs, func(a, b Record) int { return b.At.Compare(a.At) })
}
