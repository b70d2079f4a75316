package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcd-operator/etcd-operator/pkg/controller"
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
	if _, err := controller.NewMetrics(reg); err != nil {
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
	srv, err := startHealthServer("127.0.0.1:0", reg, healthz, ready.check, quietLog())
	if err != nil {
		t.Fatalf("startHealthServer: %v", err)
	}
	base := "http://" + srv.addr()

	if code, body := get(t, base+"/metrics"); code != http.StatusOK ||
		!strings.Contains(body, "etcd_operator_clusters_managed") || !strings.Contains(body, `result="error"`) {
		t.Errorf("/metrics = %d %q", code, body)
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
	srv, err := startHealthServer("127.0.0.1:0", prometheus.NewRegistry(), ready200, ready200, quietLog())
	if err != nil {
		t.Fatalf("startHealthServer: %v", err)
	}
	defer srv.Shutdown(context.Background())
	if _, err := startHealthServer(srv.addr(), prometheus.NewRegistry(), ready200, ready200, quietLog()); err == nil {
		t.Error("a second server on the same address started")
	}
}

func ready200(*http.Request) error { return nil }
