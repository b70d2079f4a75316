package framework

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const scrape = `# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
process_resident_memory_bytes 4.194304e+07
go_memstats_heap_inuse_bytes 1.048576e+07
go_goroutines 80
etcd_operator_reconcile_duration_seconds_bucket{result="success",le="0.005"} 10
etcd_operator_reconcile_duration_seconds_count{result="success"} 100
etcd_operator_reconcile_duration_seconds_count{result="error"} 5
etcd_operator_clusters_managed 4
rest_client_requests_total{code="200",host="10.96.0.1:443",method="GET"} 30
rest_client_requests_total{code="404",host="10.96.0.1:443",method="GET"} 2
rest_client_requests_total{code="200",host="10.96.0.1:443",method="PUT"} 8
`

func TestStatsFromSamples(t *testing.T) {
	at := time.Unix(1000, 0)
	samples, err := ParseMetrics(scrape)
	if err != nil {
		t.Fatal(err)
	}
	s, err := StatsFromSamples(samples, at)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUSeconds != 12.5 || s.RSS != 40<<20 || s.HeapInuse != 10<<20 || s.Goroutines != 80 || s.Clusters != 4 {
		t.Errorf("stats %+v", s)
	}
	// Passes of both results; the histogram's buckets are not passes.
	if s.Passes != 105 {
		t.Errorf("passes %v, want 105", s.Passes)
	}
	if s.Requests["GET"] != 32 || s.Requests["PUT"] != 8 || len(s.Requests) != 2 {
		t.Errorf("requests %v, want GET 32, PUT 8", s.Requests)
	}
	// An operator that does not count its etcd clients says nothing about them.
	if s.HasClientsOpened {
		t.Errorf("clients opened %v read from a scrape without them", s.ClientsOpened)
	}

	withClients, err := ParseMetrics(scrape + "etcd_operator_etcd_clients_opened_total 7\n")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := StatsFromSamples(withClients, at); err != nil || !s.HasClientsOpened || s.ClientsOpened != 7 {
		t.Errorf("clients opened %v %v (%v), want 7", s.ClientsOpened, s.HasClientsOpened, err)
	}
	// Nor one that does not export its live heap about it.
	if s.HasHeapLive {
		t.Errorf("live heap %v read from a scrape without it", s.HeapLive)
	}
	withLive, err := ParseMetrics(scrape + "go_gc_heap_live_bytes 6.291456e+06\n")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := StatsFromSamples(withLive, at); err != nil || !s.HasHeapLive || s.HeapLive != 6<<20 {
		t.Errorf("live heap %v %v (%v), want 6 MiB", s.HeapLive, s.HasHeapLive, err)
	}

	var without []Sample
	for _, x := range samples {
		if x.Name != "go_goroutines" && !strings.HasPrefix(x.Name, "rest_client") {
			without = append(without, x)
		}
	}
	s, err = StatsFromSamples(without, at)
	if err == nil || !strings.Contains(err.Error(), "go_goroutines") {
		t.Errorf("a scrape without go_goroutines: %v, want an error naming it", err)
	}
	if s.Requests != nil {
		t.Errorf("requests %v from a scrape without them, want nil", s.Requests)
	}
}

func TestWindow(t *testing.T) {
	a := OperatorStats{At: time.Unix(100, 0), UID: "u", CPUSeconds: 10, Passes: 50,
		Requests: map[string]float64{"GET": 100, "PUT": 10}, ClientsOpened: 3, HasClientsOpened: true}
	b := OperatorStats{At: time.Unix(160, 0), UID: "u", CPUSeconds: 10.6, Passes: 110,
		Requests: map[string]float64{"GET": 160, "PUT": 10, "PATCH": 6}, ClientsOpened: 5, HasClientsOpened: true}
	w, err := a.Until(b)
	if err != nil {
		t.Fatal(err)
	}
	if w.Seconds != 60 || math.Abs(w.CPUSeconds-0.6) > 1e-9 || w.Passes != 60 || w.ClientsOpened != 2 || !w.HasClientsOpened {
		t.Errorf("window %+v", w)
	}
	if n, ok := w.RequestsTotal(); !ok || n != 66 || w.Requests["PATCH"] != 6 {
		t.Errorf("requests %v %v (%v), want 66", n, ok, w.Requests)
	}
	l := LoadOver(w, 4, b)
	if math.Abs(l.CPUPercent-1) > 1e-9 || l.PassesPerSecond != 1 || math.Abs(l.RequestsPerSecond-1.1) > 1e-9 || l.Clusters != 4 {
		t.Errorf("load %+v", l)
	}

	restarted := b
	restarted.Restarts = 1
	if _, err := a.Until(restarted); !errors.Is(err, ErrOtherProcess) {
		t.Errorf("a restart in between: %v, want ErrOtherProcess", err)
	}
	other := b
	other.UID = "v"
	if _, err := a.Until(other); !errors.Is(err, ErrOtherProcess) {
		t.Errorf("another pod: %v, want ErrOtherProcess", err)
	}
	if _, err := b.Until(a); err == nil {
		t.Error("a window that ends before it starts")
	}
	uncounted := b
	uncounted.Requests, uncounted.HasClientsOpened = nil, false
	w, _ = a.Until(uncounted)
	if _, ok := w.RequestsTotal(); ok || w.HasClientsOpened {
		t.Errorf("window %+v counts what the last reading does not", w)
	}
}

func TestPerClusterAndProject(t *testing.T) {
	without := Load{Clusters: 1, CPUPercent: 0.3, RequestsPerSecond: 1.1, PassesPerSecond: 0.1, HeapInuse: 10 << 20, RSS: 40 << 20}
	with := Load{Clusters: 11, CPUPercent: 0.8, RequestsPerSecond: 2.1, PassesPerSecond: 1.1, HeapInuse: 15 << 20, RSS: 46 << 20}
	per, err := PerCluster(with, without)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(per.CPUPercent, 0.05) || !near(per.RequestsPerSecond, 0.1) || !near(per.PassesPerSecond, 0.1) ||
		per.HeapInuse != 512<<10 || !near(per.RSS, 0.6*(1<<20)) {
		t.Errorf("per cluster %+v", per)
	}
	p := Project(without, per, 1000)
	// 999 clusters more than the base's one.
	if p.Clusters != 1000 || !near(p.RequestsPerSecond, 1.1+99.9) || !near(p.PassesPerSecond, 0.1+99.9) || !near(p.CPUPercent, 0.3+49.95) ||
		p.HeapInuse != 10<<20+999*512<<10 {
		t.Errorf("projected %+v", p)
	}
	if back := Project(without, per, with.Clusters); !near(back.RequestsPerSecond, with.RequestsPerSecond) || !near(back.RSS, with.RSS) {
		t.Errorf("the line through both loads misses the second: %+v, want %+v", back, with)
	}
	if _, err := PerCluster(without, with); err == nil {
		t.Error("per cluster of fewer clusters")
	}
}

func TestClustersThatFit(t *testing.T) {
	member := Room{MilliCPU: 50, Memory: 128 << 20}
	for _, tc := range []struct {
		name  string
		room  Room
		want  int
		limit string
	}{
		{"cpu", Room{MilliCPU: 1650, Memory: 20 << 30, Pods: 100}, 11, "cpu"},
		{"pods", Room{MilliCPU: 16000, Memory: 64 << 30, Pods: 20}, 6, "pods"},
		{"memory", Room{MilliCPU: 16000, Memory: 3 << 30, Pods: 100}, 8, "memory"},
		{"none", Room{MilliCPU: 100, Memory: 3 << 30, Pods: 100}, 0, "cpu"},
		{"overcommitted", Room{MilliCPU: -200, Memory: 3 << 30, Pods: 100}, 0, "cpu"},
		{"two at once", Room{MilliCPU: 300, Memory: 768 << 20, Pods: 100}, 2, "cpu, memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fit, err := ClustersThatFit(tc.room, member, 3)
			if err != nil {
				t.Fatal(err)
			}
			if fit.Clusters != tc.want || fit.Limit() != tc.limit {
				t.Errorf("fit %+v (limit %s), want %d limited by %s", fit, fit.Limit(), tc.want, tc.limit)
			}
		})
	}
	fit, _ := ClustersThatFit(Room{MilliCPU: 16000, Memory: 64 << 30, Pods: 200}, member, 3)
	if capped := fit.With("bench cap", 20); capped.Clusters != 20 || capped.Limit() != "bench cap" || fit.By["bench cap"] != 0 {
		t.Errorf("capped %+v, from %+v", capped, fit)
	}
	// A member that requests no CPU is not limited by it.
	if fit, _ := ClustersThatFit(Room{MilliCPU: 0, Memory: 3 << 30, Pods: 30}, Room{Memory: 128 << 20}, 3); fit.Clusters != 8 || fit.Limit() != "memory" {
		t.Errorf("fit %+v", fit)
	}
	if _, err := ClustersThatFit(Room{}, member, 0); err == nil {
		t.Error("clusters of no members fit")
	}
	if got := (Room{1, 2, 3}).Add(Room{10, 20, 30}); got != (Room{11, 22, 33}) {
		t.Errorf("Add = %+v", got)
	}
}
