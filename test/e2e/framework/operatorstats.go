package framework

import (
	"errors"
	"fmt"
	"time"
)

// The metrics of the operator's own /metrics that OperatorStats reads.
const (
	metricCPU           = "process_cpu_seconds_total"
	metricRSS           = "process_resident_memory_bytes"
	metricHeapInuse     = "go_memstats_heap_inuse_bytes"
	metricHeapLive      = "go_gc_heap_live_bytes"
	metricGoroutines    = "go_goroutines"
	metricPasses        = "etcd_operator_reconcile_duration_seconds_count"
	metricClusters      = "etcd_operator_clusters_managed"
	metricRequests      = "rest_client_requests_total"
	metricClientsOpened = "etcd_operator_etcd_clients_opened_total"
)

// OperatorStats is one reading of what the operator's process costs, from its own /metrics.
type OperatorStats struct {
	At       time.Time
	Pod, UID string
	Restarts int
	// CPUSeconds is the process's CPU time; RSS its resident memory and HeapInuse the Go
	// heap's spans in use, in bytes; Goroutines how many goroutines it runs.
	CPUSeconds, RSS, HeapInuse, Goroutines float64
	// HeapLive is what the Go collector's last cycle found reachable, in bytes: unlike
	// HeapInuse it holds no garbage awaiting the next cycle. Valid when HasHeapLive: an
	// operator built before it was exported says nothing.
	HeapLive    float64
	HasHeapLive bool
	// Passes are the reconcile passes it has run, of every kind; Clusters the EtcdClusters
	// it runs a loop for.
	Passes, Clusters float64
	// Requests are its API clients' requests by method (rest_client_requests_total), nil
	// when it does not export them.
	Requests map[string]float64
	// ClientsOpened are the etcd clients it opened (etcd_operator_etcd_clients_opened_total),
	// valid when HasClientsOpened: an operator that does not count them says nothing.
	ClientsOpened    float64
	HasClientsOpened bool
}

// ReadOperatorStats reads the running operator pod's /metrics (see readOperatorPod).
func (f *Framework) ReadOperatorStats() (OperatorStats, error) {
	m, samples, err := f.readOperatorPod()
	if err != nil {
		return OperatorStats{}, err
	}
	s, err := StatsFromSamples(samples, time.Now())
	s.Pod, s.UID, s.Restarts = m.Pod, m.UID, m.Restarts
	return s, err
}

// WatchOperatorStats reads the operator's stats every interval until Stop; a reading that
// fails is counted and skipped.
func (f *Framework) WatchOperatorStats(interval time.Duration) *Watch[OperatorStats] {
	return watchReadings(interval, f.ReadOperatorStats)
}

// StatsFromSamples picks OperatorStats out of the samples of one scrape taken at at. The
// process's, the Go runtime's and the controller's metrics must be there; the API request and
// etcd client counts are read when present.
func StatsFromSamples(samples []Sample, at time.Time) (OperatorStats, error) {
	s := OperatorStats{At: at}
	var errs []error
	one := func(name string) float64 {
		found := FindSamples(samples, name, nil)
		if len(found) != 1 {
			errs = append(errs, fmt.Errorf("%d %s samples, want 1", len(found), name))
			return 0
		}
		return found[0].Value
	}
	s.CPUSeconds, s.RSS, s.HeapInuse = one(metricCPU), one(metricRSS), one(metricHeapInuse)
	s.Goroutines, s.Clusters = one(metricGoroutines), one(metricClusters)
	if live := FindSamples(samples, metricHeapLive, nil); len(live) == 1 {
		s.HeapLive, s.HasHeapLive = live[0].Value, true
	}
	passes := FindSamples(samples, metricPasses, nil)
	if len(passes) == 0 {
		errs = append(errs, fmt.Errorf("no %s samples", metricPasses))
	}
	for _, p := range passes {
		s.Passes += p.Value
	}
	for _, r := range FindSamples(samples, metricRequests, nil) {
		if s.Requests == nil {
			s.Requests = map[string]float64{}
		}
		s.Requests[r.Labels["method"]] += r.Value
	}
	for _, c := range FindSamples(samples, metricClientsOpened, nil) {
		s.ClientsOpened += c.Value
		s.HasClientsOpened = true
	}
	return s, errors.Join(errs...)
}

// Window is what the operator did between two readings of one process.
type Window struct {
	Seconds, CPUSeconds, Passes float64
	// Requests are the API requests by method, nil when the operator does not count them.
	Requests map[string]float64
	// ClientsOpened is valid when HasClientsOpened.
	ClientsOpened    float64
	HasClientsOpened bool
}

// ErrOtherProcess is returned for two readings of different operator processes (another pod,
// or a restart in between): their counters do not compare.
var ErrOtherProcess = errors.New("the readings are of different operator processes")

// Until is the window from a to b, which must be of the same process, b not earlier.
func (a OperatorStats) Until(b OperatorStats) (Window, error) {
	if a.UID != b.UID || a.Restarts != b.Restarts {
		return Window{}, fmt.Errorf("%w: pod %s (uid %s, %d restarts), then pod %s (uid %s, %d restarts)",
			ErrOtherProcess, a.Pod, a.UID, a.Restarts, b.Pod, b.UID, b.Restarts)
	}
	if b.At.Before(a.At) {
		return Window{}, fmt.Errorf("reading of %v is before the one of %v", b.At, a.At)
	}
	w := Window{Seconds: b.At.Sub(a.At).Seconds(), CPUSeconds: b.CPUSeconds - a.CPUSeconds, Passes: b.Passes - a.Passes}
	if a.Requests != nil && b.Requests != nil {
		w.Requests = map[string]float64{}
		for method, n := range b.Requests {
			w.Requests[method] = n - a.Requests[method]
		}
	}
	if a.HasClientsOpened && b.HasClientsOpened {
		w.ClientsOpened, w.HasClientsOpened = b.ClientsOpened-a.ClientsOpened, true
	}
	return w, nil
}

// RequestsTotal is the API requests of every method; ok is false when they are not counted.
func (w Window) RequestsTotal() (n float64, ok bool) {
	for _, v := range w.Requests {
		n += v
	}
	return n, w.Requests != nil
}

// Load is what the operator costs, with a number of clusters: per second over a window for
// the rates, at its end for the memory.
type Load struct {
	Clusters float64
	// CPUPercent is of one core.
	CPUPercent        float64
	RequestsPerSecond float64
	PassesPerSecond   float64
	// HeapInuse and RSS are in bytes, at the end of the window.
	HeapInuse, RSS float64
}

// LoadOver is the operator's load over w, with clusters clusters, ending at the reading end.
// RequestsPerSecond is 0 when the requests are not counted.
func LoadOver(w Window, clusters float64, end OperatorStats) Load {
	l := Load{Clusters: clusters, HeapInuse: end.HeapInuse, RSS: end.RSS}
	if w.Seconds > 0 {
		l.CPUPercent = 100 * w.CPUSeconds / w.Seconds
		l.PassesPerSecond = w.Passes / w.Seconds
		if n, ok := w.RequestsTotal(); ok {
			l.RequestsPerSecond = n / w.Seconds
		}
	}
	return l
}

// PerCluster is what each cluster of with adds over without: the difference of each figure
// over the difference in clusters.
func PerCluster(with, without Load) (Load, error) {
	d := with.Clusters - without.Clusters
	if d <= 0 {
		return Load{}, fmt.Errorf("%v clusters, then %v: no cluster added", without.Clusters, with.Clusters)
	}
	return Load{
		Clusters:          1,
		CPUPercent:        (with.CPUPercent - without.CPUPercent) / d,
		RequestsPerSecond: (with.RequestsPerSecond - without.RequestsPerSecond) / d,
		PassesPerSecond:   (with.PassesPerSecond - without.PassesPerSecond) / d,
		HeapInuse:         (with.HeapInuse - without.HeapInuse) / d,
		RSS:               (with.RSS - without.RSS) / d,
	}, nil
}

// Project is the load with n clusters, on the line through base with the slope per: what
// base costs without its clusters, plus n times one cluster's cost.
func Project(base, per Load, n float64) Load {
	k := n - base.Clusters
	return Load{
		Clusters:          n,
		CPUPercent:        base.CPUPercent + k*per.CPUPercent,
		RequestsPerSecond: base.RequestsPerSecond + k*per.RequestsPerSecond,
		PassesPerSecond:   base.PassesPerSecond + k*per.PassesPerSecond,
		HeapInuse:         base.HeapInuse + k*per.HeapInuse,
		RSS:               base.RSS + k*per.RSS,
	}
}
