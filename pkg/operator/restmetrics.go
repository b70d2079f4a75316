package operator

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// restRequests counts the requests the operator's API clients send: the load it puts on the
// API server, which priority and fairness shares among clients. client-go reports every
// request's result to one adapter per process (k8s.io/client-go/tools/metrics), so the
// counter is one per process too, served by every registry newOperatorRegistry makes. Its
// labels are client-go's own, by its contract: the status code (or "<error>" when no answer
// came), the method, and the API server's host:port, which is where the client connects and
// no secret.
var restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "rest_client_requests_total",
	Help: "Requests the operator's API clients sent, by status code, method and API server host.",
}, []string{"code", "method", "host"})

// requestResult is client-go's ResultMetric, counting into restRequests.
type requestResult struct{}

var _ clientmetrics.ResultMetric = requestResult{}

// Increment counts one request that ended with code.
func (requestResult) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(code, method, host).Inc()
}

// registerClientMetrics has client-go count the requests of every client of the process into
// restRequests, and registers restRequests with reg. client-go takes the first adapter it is
// given and ignores later ones: calling this again (a registry per test) changes nothing.
func registerClientMetrics(reg prometheus.Registerer) {
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestResult: requestResult{}})
	reg.MustRegister(restRequests)
}
