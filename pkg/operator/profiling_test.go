package operator

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The profiling server serves Go's profiles; the metrics server, which a NetworkPolicy may
// open to the monitoring system, serves none of them.
func TestProfilingServedOnItsOwnAddress(t *testing.T) {
	srv, err := startServer("127.0.0.1:0", profilingHandler(), "profiles", quietLog())
	if err != nil {
		t.Fatalf("starting the profiling server: %v", err)
	}
	defer srv.Shutdown(context.Background())
	base := "http://" + srv.addr()
	if code, body := get(t, base+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("goroutine profile = %d %.80q", code, body)
	}
	if code, body := get(t, base+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "heap") {
		t.Errorf("profile index = %d %.80q", code, body)
	}

	metricsSrv, err := startServer("127.0.0.1:0", metricsHandler(prometheus.NewRegistry(), quietLog()), "metrics", quietLog())
	if err != nil {
		t.Fatalf("starting the metrics server: %v", err)
	}
	defer metricsSrv.Shutdown(context.Background())
	if code, _ := get(t, "http://"+metricsSrv.addr()+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("metrics server's /debug/pprof/ = %d, want 404", code)
	}
}
