package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
)

// check is a health check: nil means healthy.
type check func(r *http.Request) error

// readiness is /readyz: a replica that leads is ready once it has installed the CRD and its
// controller has synced its caches. A replica that does not lead is ready: it serves metrics
// and stands by.
type readiness struct {
	synced atomic.Pointer[func() bool]
}

// leading records that this replica leads and is ready once synced reports true.
func (r *readiness) leading(synced func() bool) { r.synced.Store(&synced) }

func (r *readiness) check(*http.Request) error {
	if synced := r.synced.Load(); synced != nil && !(*synced)() {
		return errors.New("leading, CRD or informer caches not ready yet")
	}
	return nil
}

// httpServer is one of the operator's two HTTP servers: metrics, and health. They listen on
// separate ports so that a NetworkPolicy can open the metrics to the monitoring system alone
// while the kubelet probes the health port, and so that a probe never waits behind a scrape.
type httpServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// served is what one of the servers listens on and serves.
type served struct {
	addr, what string
	h          http.Handler
}

// metricsHandler serves /metrics: the operator's own counters, the work queue's, and the Go
// runtime's and process's. No metric carries a secret: labels are cluster keys and results
// (TestMetricsCarryNoSecrets).
func metricsHandler(gatherer prometheus.Gatherer, log *logrus.Entry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: logrusPrinter{log}}))
	return mux
}

// healthHandler serves /healthz and /readyz.
func healthHandler(healthz, readyz check) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", checkHandler(healthz))
	mux.Handle("GET /readyz", checkHandler(readyz))
	return mux
}

// startServer listens on addr and serves h in the background. It fails at once when addr
// cannot be bound.
func startServer(addr string, h http.Handler, what string, log *logrus.Entry) (*httpServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for %s: %w", addr, what, err)
	}
	s := &httpServer{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	log.WithFields(logrus.Fields{"addr": ln.Addr().String(), "serving": what}).Info("Serving")
	return s, nil
}

// addr is the address the server listens on.
func (h *httpServer) addr() string { return h.ln.Addr().String() }

// Shutdown stops the server, letting in-flight requests finish until ctx is done.
func (h *httpServer) Shutdown(ctx context.Context) error {
	if err := h.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutting down the server on %s: %w", h.addr(), err)
	}
	if err := <-h.done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", h.addr(), err)
	}
	return nil
}

// checkHandler answers 200 "ok" when c passes and 503 with its reason otherwise.
func checkHandler(c check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := c(r); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ok: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// logrusPrinter adapts a logrus entry to promhttp's error logger.
type logrusPrinter struct{ log *logrus.Entry }

func (p logrusPrinter) Println(v ...any) {
	p.log.WithField("error", fmt.Sprint(v...)).Error("Serving metrics failed")
}
