package httpapi

import (
	"net/http"
	"net/http/pprof"
)

// pprofPrefix is where the runtime profiles are served.
const pprofPrefix = "/debug/pprof/"

// pprofProfiles are the named runtime profiles served under pprofPrefix.
var pprofProfiles = []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"}

// mountPprof serves Go's runtime profiles on mux: the index, the command
// line, a CPU profile, symbol look-ups, an execution trace and the named
// profiles. The handlers are mounted one by one on pincer's own mux, so
// nothing depends on http.DefaultServeMux (which importing net/http/pprof
// also fills, and which pincer never serves).
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc(pprofPrefix, pprof.Index)
	mux.HandleFunc(pprofPrefix+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPrefix+"profile", pprof.Profile)
	mux.HandleFunc(pprofPrefix+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPrefix+"trace", pprof.Trace)
	for _, name := range pprofProfiles {
		mux.Handle(pprofPrefix+name, pprof.Handler(name))
	}
}
