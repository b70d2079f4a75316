package framework

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"time"
)

// operatorMetricsPort is the port of the operator's /metrics on its pod (deploy/).
const operatorMetricsPort = 8080

// OperatorMemory is one reading of the operator's resident memory, with the pod it was read
// from and how often that pod's container had restarted: readings compare only within one
// process.
type OperatorMemory struct {
	Pod      string
	UID      string
	Restarts int
	// RSS is process_resident_memory_bytes, in bytes.
	RSS float64
}

// ReadOperatorMemory reads process_resident_memory_bytes from the running operator pod's
// /metrics through the API server's pod proxy (the suite's API proxy: no kubectl process).
func (f *Framework) ReadOperatorMemory() (OperatorMemory, error) {
	m, samples, err := f.readOperatorPod()
	if err != nil {
		return OperatorMemory{}, err
	}
	rss := FindSamples(samples, "process_resident_memory_bytes", nil)
	if len(rss) != 1 {
		return OperatorMemory{}, fmt.Errorf("%d process_resident_memory_bytes samples in the operator's metrics, want 1", len(rss))
	}
	m.RSS = rss[0].Value
	return m, nil
}

// readOperatorPod finds the one running operator pod and reads its /metrics through the API
// server's pod proxy: the process itself, not whichever pod the Service picks.
func (f *Framework) readOperatorPod() (OperatorMemory, []Sample, error) {
	body, err := f.apiGet(fmt.Sprintf("/api/v1/namespaces/%s/pods?labelSelector=%s", OperatorNamespace,
		url.QueryEscape("app.kubernetes.io/name=etcd-operator")))
	if err != nil {
		return OperatorMemory{}, nil, err
	}
	var pods struct {
		Items []struct {
			Metadata struct {
				Name              string  `json:"name"`
				UID               string  `json:"uid"`
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				Phase             string `json:"phase"`
				ContainerStatuses []struct {
					RestartCount int `json:"restartCount"`
				} `json:"containerStatuses"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &pods); err != nil {
		return OperatorMemory{}, nil, fmt.Errorf("decoding the operator's pods: %w", err)
	}
	var running []OperatorMemory
	for _, p := range pods.Items {
		if p.Status.Phase != "Running" || p.Metadata.DeletionTimestamp != nil {
			continue
		}
		m := OperatorMemory{Pod: p.Metadata.Name, UID: p.Metadata.UID}
		for _, c := range p.Status.ContainerStatuses {
			m.Restarts += c.RestartCount
		}
		running = append(running, m)
	}
	if len(running) != 1 {
		return OperatorMemory{}, nil, fmt.Errorf("%d running operator pods, want 1: %+v", len(running), running)
	}
	m := running[0]
	body, err = f.apiGet(fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%d/proxy/metrics", OperatorNamespace, url.PathEscape(m.Pod), operatorMetricsPort))
	if err != nil {
		return OperatorMemory{}, nil, err
	}
	samples, err := ParseMetrics(string(body))
	if err != nil {
		return OperatorMemory{}, nil, err
	}
	return m, samples, nil
}

// Watch takes readings (of the operator's memory, of its metrics) in the background, every
// interval, until Stop.
type Watch[T any] struct {
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu       sync.Mutex
	readings []T
	errs     int
	lastErr  error
}

// MemoryWatch reads the operator's memory in the background (WatchOperatorMemory).
type MemoryWatch = Watch[OperatorMemory]

// WatchOperatorMemory reads the operator's memory every interval until Stop. A reading that
// fails is counted and skipped: the API server's proxy may time out on a busy node.
func (f *Framework) WatchOperatorMemory(interval time.Duration) *MemoryWatch {
	return watchReadings(interval, f.ReadOperatorMemory)
}

// watchReadings calls read every interval until Stop, keeping what it returns.
func watchReadings[T any](interval time.Duration, read func() (T, error)) *Watch[T] {
	w := &Watch[T]{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		// The cadence of the readings, not a synchronization: nothing waits on it.
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			m, err := read()
			w.mu.Lock()
			if err != nil {
				w.errs++
				w.lastErr = err
			} else {
				w.readings = append(w.readings, m)
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// Readings returns the readings so far.
func (w *Watch[T]) Readings() []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]T(nil), w.readings...)
}

// Stop ends the readings and returns them, with how many failed and the last failure. It
// may be called again (deferred, in case the test ends first).
func (w *Watch[T]) Stop() (readings []T, failed int, last error) {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readings, w.errs, w.lastErr
}
