package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// Writes run on the driver's own statements, prepared once on the
// writer's connection, with their arguments converted into a slice the
// writer reuses: through database/sql every statement converted its
// arguments anew and wrapped its result and context (about 7 KB of
// garbage an answered turn, a few hundred bytes a logged message) for a
// connection only the writer's goroutine uses anyway. Reads still go
// through database/sql, for its scanning.

// rawStmt is a statement of the driver that runs with a context.
type rawStmt interface {
	driver.Stmt
	driver.StmtExecContext
}

// rawExec holds the driver statements of the writer's connection and the
// argument slice they reuse; only the writer's goroutine touches it (and
// Open, before the writer starts).
type rawExec struct {
	conn  any // the driver connection the statements were prepared on
	stmts map[string]rawStmt
	args  []driver.NamedValue
}

// stmt returns query's statement on dc, preparing it the first time.
func (r *rawExec) stmt(dc any, query string) (rawStmt, error) {
	if r.conn != dc {
		// Another driver connection (database/sql replaced a broken one):
		// its statements are not this one's.
		r.drop()
		r.conn = dc
	}
	if s, ok := r.stmts[query]; ok {
		return s, nil
	}
	p, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("sqlite: the driver's connection %T prepares no statement", dc)
	}
	st, err := p.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	s, ok := st.(rawStmt)
	if !ok {
		return nil, errors.Join(fmt.Errorf("sqlite: the driver's statement %T runs without a context only", st), st.Close())
	}
	if r.stmts == nil {
		r.stmts = map[string]rawStmt{}
	}
	r.stmts[query] = s
	return s, nil
}

// exec runs query on dc with args, converted as database/sql converts
// them for a driver that checks no values itself.
func (r *rawExec) exec(dc any, query string, args []any) (driver.Result, error) {
	s, err := r.stmt(dc, query)
	if err != nil {
		return nil, err
	}
	nv := r.args[:0]
	defer func() {
		clear(nv) // holds no caller's values
		r.args = nv[:0]
	}()
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("sqlite: argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	// Not cancellable, as quick makes every statement: they take
	// microseconds, and a cancellable context costs the driver a goroutine
	// watching it.
	return s.ExecContext(context.Background(), nv)
}

// driverValue is v as a driver value: the usual types as they are, the
// rest through driver.DefaultParameterConverter, as database/sql does.
func driverValue(v any) (driver.Value, error) {
	switch x := v.(type) {
	case nil, int64, float64, bool, []byte, string, time.Time:
		return x, nil
	case int:
		return int64(x), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}

// drop closes every statement; they belong to r.conn.
func (r *rawExec) drop() error {
	var errs []error
	for q, s := range r.stmts {
		errs = append(errs, s.Close())
		delete(r.stmts, q)
	}
	return errors.Join(errs...)
}
