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

// Metrics are the controller's Prometheus collectors. Create them once per registry with
// NewMetrics; every label they carry has a bounded set of values.
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	reconcileErrors   prometheus.Counter
	clustersManaged   prometheus.Gauge

	queueDepth          *prometheus.GaugeVec
	queueAdds           *prometheus.CounterVec
	queueLatency        *prometheus.HistogramVec
	queueWorkDuration   *prometheus.HistogramVec
	queueUnfinished     *prometheus.GaugeVec
	queueLongestRunning *prometheus.GaugeVec
	queueRetries        *prometheus.CounterVec
}

var _ workqueue.MetricsProvider = (*Metrics)(nil)

// NewMetrics creates the controller's collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	queueLabels := []string{"name"}
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_operator_reconcile_duration_seconds",
			Help:    "Duration of one reconcile pass of one EtcdCluster, by result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"result"}),
		reconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etcd_operator_reconcile_errors_total",
			Help: "Reconcile passes that returned an error and were retried with backoff.",
		}),
		clustersManaged: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "etcd_operator_clusters_managed",
			Help: "EtcdClusters that currently have a control loop in this operator.",
		}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of the workqueue.",
		}, queueLabels),
		queueAdds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Adds handled by the workqueue.",
		}, queueLabels),
		queueLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long an item stays in the workqueue before being requested.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
		}, queueLabels),
		queueWorkDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long processing an item from the workqueue takes.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
		}, queueLabels),
		queueUnfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress that has not been observed by work_duration yet.",
		}, queueLabels),
		queueLongestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running processor of the workqueue has been running.",
		}, queueLabels),
		queueRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Retries handled by the workqueue.",
		}, queueLabels),
	}
	for _, c := range []prometheus.Collector{
		m.reconcileDuration, m.reconcileErrors, m.clustersManaged,
		m.queueDepth, m.queueAdds, m.queueLatency, m.queueWorkDuration,
		m.queueUnfinished, m.queueLongestRunning, m.queueRetries,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering controller metrics: %w", err)
		}
	}
	// Both results are exported from the start, so rate() works before the first error.
	m.reconcileDuration.WithLabelValues(resultSuccess)
	m.reconcileDuration.WithLabelValues(resultError)
	return m, nil
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
