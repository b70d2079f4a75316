//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestClusterMetrics scrapes the operator's /metrics through its Service, as Prometheus does:
// a cluster's desired and ready members, its Available condition and the actions that built it
// are there once it is in spec, with the operator's API requests, and every series of the
// cluster is gone once it is deleted.
//
// Not parallel: the action counters live in the operator's process, and the parallel tests
// that delete the operator's pod (TestChaos, TestRestartInPlace, ...) would start a new one
// that has taken no action on this cluster (a run at 4 saw CreatePod = 0).
func TestClusterMetrics(t *testing.T) {
	f := framework.New(t)
	requireOperator(t, f)
	const name = "metrics"
	f.Apply(clusterManifest(name, "  size: 3\n  storage: {emptyDir: {}}\n"))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)

	cluster := map[string]string{"namespace": f.Namespace, "name": name}
	value := func(samples []framework.Sample, metric string, labels map[string]string) (float64, error) {
		want := map[string]string{}
		for k, v := range cluster {
			want[k] = v
		}
		for k, v := range labels {
			want[k] = v
		}
		got := framework.FindSamples(samples, metric, want)
		if len(got) != 1 {
			return 0, fmt.Errorf("%d series %s%v, want 1", len(got), metric, want)
		}
		return got[0].Value, nil
	}
	// The status the metrics read is written by the pass that saw the cluster in spec: the
	// scrape after it says the same.
	f.Eventually("the operator's metrics of the cluster", time.Minute, func() (bool, error) {
		samples, err := f.OperatorMetrics()
		if err != nil {
			return false, err
		}
		for _, want := range []struct {
			metric string
			labels map[string]string
			value  float64
		}{
			{"etcd_operator_cluster_members_desired", nil, 3},
			{"etcd_operator_cluster_members_ready", nil, 3},
			{"etcd_operator_cluster_members_voting", nil, 3},
			{"etcd_operator_cluster_members_learners", nil, 0},
			{"etcd_operator_cluster_quorum_margin", nil, 1},
			{"etcd_operator_cluster_condition", map[string]string{"type": "Available", "reason": "ClusterHealthy"}, 1},
		} {
			v, err := value(samples, want.metric, want.labels)
			if err != nil {
				return false, err
			}
			if v != want.value {
				return false, fmt.Errorf("%s%v = %g, want %g", want.metric, want.labels, v, want.value)
			}
		}
		// Pods made, learners added and promoted: counted, at least once each (an add whose
		// answer was lost is not counted, its retry finds the member there).
		for _, action := range []string{"CreatePod", "AddLearner", "PromoteLearner"} {
			if v, err := value(samples, "etcd_operator_cluster_actions_total", map[string]string{"action": action}); err != nil || v < 1 {
				return false, fmt.Errorf("actions %s = %g (%v), want at least 1", action, v, err)
			}
		}
		if _, err := value(samples, "etcd_operator_cluster_last_successful_pass_timestamp_seconds", nil); err != nil {
			return false, err
		}
		return true, nil
	})
	// The operator counts its own requests to the API server, as client-go reports them
	// (docs/scale.md): what it created (the cluster's Lease, pods, Events) was POSTs the API
	// server answered 201.
	samples, err := f.OperatorMetrics()
	if err != nil {
		t.Fatal(err)
	}
	var created float64
	for _, s := range framework.FindSamples(samples, "rest_client_requests_total", map[string]string{"method": "POST", "code": "201"}) {
		created += s.Value
	}
	if created < 1 {
		t.Errorf("rest_client_requests_total{method=POST,code=201} = %g, want the creations counted", created)
	}

	f.Delete("etcdcluster", name)
	f.Eventually("the deleted cluster's series to go", 2*time.Minute, func() (bool, error) {
		samples, err := f.OperatorMetrics()
		if err != nil {
			return false, err
		}
		for _, s := range samples {
			if strings.HasPrefix(s.Name, "etcd_operator_cluster_") && s.Has(cluster) {
				return false, fmt.Errorf("still exported: %s%v", s.Name, s.Labels)
			}
		}
		return true, nil
	})
}
