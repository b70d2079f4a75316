package operator

import (
	"net/http"
	"net/http/pprof"
)

// profilingHandler serves Go's runtime profiles under /debug/pprof/ (--profiling-addr), for
// `go tool pprof` through `kubectl port-forward`. Profiles hold stacks, sizes and counts,
// never the values in memory, so no key or credential is served; the address is off by
// default and meant for loopback, as a profile costs CPU while it runs.
func profilingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
