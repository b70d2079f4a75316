package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestHealthServer(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg); err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	var ready readiness
	var unhealthy atomic.Bool
	healthz := func(*http.Request) error {
		if unhealthy.Load() {
			return errors.New("lease renewal overdue")
		}
		return nil
	}
	srv, err := startServer("127.0.0.1:0", healthHandler(healthz, ready.check), "health", quietLog())
	if err != nil {
		t.Fatalf("starting the health server: %v", err)
	}
	base := "http://" + srv.addr()
	metricsSrv, err := startServer("127.0.0.1:0", metricsHandler(reg, quietLog()), "metrics", quietLog())
	if err != nil {
		t.Fatalf("starting the metrics server: %v", err)
	}
	defer metricsSrv.Shutdown(context.Background())
	metricsBase := "http://" + metricsSrv.addr()

	if code, body := get(t, metricsBase+"/metrics"); code != http.StatusOK ||
		!strings.Contains(body, "etcd_operator_clusters_managed") || !strings.Contains(body, `result="error"`) {
		t.Errorf("/metrics = %d %q", code, body)
	}
	// Each port serves its own paths only.
	for _, url := range []string{base + "/metrics", metricsBase + "/healthz", metricsBase + "/readyz"} {
		if code, _ := get(t, url); code != http.StatusNotFound {
			t.Errorf("%s = %d, want 404", url, code)
		}
	}
	// A standby replica is ready.
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz of a standby = %d, want 200", code)
	}
	// A leader is ready once its caches synced.
	var synced atomic.Bool
	ready.leading(synced.Load)
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready yet") {
		t.Errorf("/readyz of an unsynced leader = %d %q, want 503", code, body)
	}
	synced.Store(true)
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz of a synced leader = %d, want 200", code)
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	unhealthy.Store(true)
	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "overdue") {
		t.Errorf("/healthz when unhealthy = %d %q, want 503", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestHealthServerAddressInUse(t *testing.T) {
	srv, err := startServer("127.0.0.1:0", healthHandler(ready200, ready200), "health", quietLog())
	if err != nil {
		t.Fatalf("startServer: %v", err)
	}
	defer srv.Shutdown(context.Background())
	if _, err := startServer(srv.addr(), metricsHandler(prometheus.NewRegistry(), quietLog()), "metrics", quietLog()); err == nil {
		t.Error("a second server on the same address started")
	}
}

// TestMetricsCarryNoSecrets: the metrics the operator registers are its own, the work
// queue's, its API clients', the Go runtime's and the process's, and their labels name
// clusters, results and the API server's address only, never a value from a spec, a Secret
// or the environment. A new metric or label fails here until it has been judged.
func TestMetricsCarryNoSecrets(t *testing.T) {
	reg := newOperatorRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.controller.NewAddsMetric("etcdclusters").Inc()
	m.controller.NewDepthMetric("etcdclusters").Inc()
	requestResult{}.Increment(context.Background(), "200", "GET", "10.96.0.1:443")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// code, method and host are client-go's labels of its request counts (restmetrics.go).
	allowedLabels := map[string]bool{"name": true, "result": true, "version": true, "code": true, "method": true, "host": true}
	prefixes := []string{"etcd_operator_", "workqueue_", "rest_client_", "go_", "process_"}
	for _, f := range families {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(f.GetName(), p) }) {
			t.Errorf("metric %s is not one of the operator's, the work queue's, the API clients', Go's or the process's", f.GetName())
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if !allowedLabels[l.GetName()] {
					t.Errorf("metric %s has label %s=%q: not a label judged free of secrets", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func ready200(*http.Request) error { return nil }
