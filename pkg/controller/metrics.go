package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Result label values of the reconcile duration histogram. The set is closed so the metric's
// cardinality stays bounded; error text never becomes a label.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// LoopGauge declares the gauge that counts one kind's running loops, under a name of the
// kind's own (etcd_operator_clusters_managed): the kinds' gauges share no name or label.
type LoopGauge struct {
	// Kind is the Kind.Name whose loops the gauge counts.
	Kind string
	// Name and Help are the metric's name and help text.
	Name, Help string
}

// Metrics are the controller's Prometheus collectors. Create them once per registry with
// NewMetrics; every label they carry has a bounded set of values. The reconcile pass
// metrics count the passes of every kind; each kind's loops have their own gauge.
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	reconcileErrors   prometheus.Counter
	// loops are the gauges of running loops by kind.
	loops map[string]prometheus.Gauge

	queueDepth          *prometheus.GaugeVec
	queueAdds           *prometheus.CounterVec
	queueLatency        *prometheus.HistogramVec
	queueWorkDuration   *prometheus.HistogramVec
	queueUnfinished     *prometheus.GaugeVec
	queueLongestRunning *prometheus.GaugeVec
	queueRetries        *prometheus.CounterVec
}

var _ workqueue.MetricsProvider = (*Metrics)(nil)

// NewMetrics creates the controller's collectors, with one loop gauge per kind the controller
// will run, and registers them with reg. Declaring the gauges here, before any controller
// exists, exports them from the start, also on a replica that does not lead.
func NewMetrics(reg prometheus.Registerer, gauges ...LoopGauge) (*Metrics, error) {
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_operator_reconcile_duration_seconds",
			Help:    "Duration of one reconcile pass of one object, by result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"result"}),
		reconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etcd_operator_reconcile_errors_total",
			Help: "Reconcile passes that returned an error and were retried with backoff.",
		}),
		loops: map[string]prometheus.Gauge{},
	}
	collectors := []prometheus.Collector{m.reconcileDuration, m.reconcileErrors}
	for _, g := range gauges {
		if _, dup := m.loops[g.Kind]; dup || g.Kind == "" || g.Name == "" {
			return nil, fmt.Errorf("registering controller metrics: loop gauge %q of kind %q is empty or declared twice", g.Name, g.Kind)
		}
		m.loops[g.Kind] = prometheus.NewGauge(prometheus.GaugeOpts{Name: g.Name, Help: g.Help})
		collectors = append(collectors, m.loops[g.Kind])
	}
	collectors = append(collectors, m.newQueueMetrics()...)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	// Both results are exported from the start, so rate() works before the first error.
	m.reconcileDuration.WithLabelValues(resultSuccess)
	m.reconcileDuration.WithLabelValues(resultError)
	return m, nil
}

// newQueueMetrics creates the workqueue collectors, labelled by queue name, and returns them.
func (m *Metrics) newQueueMetrics() []prometheus.Collector {
	queueLabels := []string{"name"}
	m.queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of the workqueue.",
	}, queueLabels)
	m.queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "adds_total",
		Help: "Adds handled by the workqueue.",
	}, queueLabels)
	m.queueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help:    "How long an item stays in the workqueue before being requested.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
	}, queueLabels)
	m.queueWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "work_duration_seconds",
		Help:    "How long processing an item from the workqueue takes.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
	}, queueLabels)
	m.queueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress that has not been observed by work_duration yet.",
	}, queueLabels)
	m.queueLongestRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "Seconds the longest running processor of the workqueue has been running.",
	}, queueLabels)
	m.queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "retries_total",
		Help: "Retries handled by the workqueue.",
	}, queueLabels)
	return []prometheus.Collector{
		m.queueDepth, m.queueAdds, m.queueLatency, m.queueWorkDuration,
		m.queueUnfinished, m.queueLongestRunning, m.queueRetries,
	}
}

// hasLoopGauge returns an error unless NewMetrics declared a loop gauge for kind.
func (m *Metrics) hasLoopGauge(kind string) error {
	if _, ok := m.loops[kind]; !ok {
		return fmt.Errorf("checking metrics: NewMetrics declared no LoopGauge for kind %s", kind)
	}
	return nil
}

// setLoops records how many loops of kind run.
func (m *Metrics) setLoops(kind string, n int) {
	m.loops[kind].Set(float64(n))
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.queueDepth.WithLabelValues(name)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.queueAdds.WithLabelValues(name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.queueLatency.WithLabelValues(name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.queueWorkDuration.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.queueUnfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.queueLongestRunning.WithLabelValues(name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.queueRetries.WithLabelValues(name)
}

// observePass records one finished pass.
func (m *Metrics) observePass(seconds float64, failed bool) {
	result := resultSuccess
	if failed {
		result = resultError
		m.reconcileErrors.Inc()
	}
	m.reconcileDuration.WithLabelValues(result).Observe(seconds)
}
