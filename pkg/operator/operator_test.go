package operator

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

func TestReadCgroupLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if n, ok := readCgroupLimit(write("v2", "134217728\n")); !ok || n != 134217728 {
		t.Errorf("readCgroupLimit(134217728) = %d, %v", n, ok)
	}
	if _, ok := readCgroupLimit(write("max", "max\n")); ok {
		t.Error("readCgroupLimit accepted max")
	}
	if _, ok := readCgroupLimit(write("v1", "9223372036854771712\n")); ok {
		t.Error("readCgroupLimit accepted cgroup v1's unlimited")
	}
	if _, ok := readCgroupLimit(dir + "/missing"); ok {
		t.Error("readCgroupLimit accepted a missing file")
	}
}

// runController wires the informers, the controller and the cluster Reconciler: an
// EtcdCluster created through the API gets its Services from a pass, and cancelling stops
// everything cleanly.
func TestRunControllerWiresReconciler(t *testing.T) {
	kube := k8sfake.NewClientset()
	etcd := etcdfake.NewSimpleClientset()
	reg := prometheus.NewRegistry()
	metrics, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	o := &Options{Namespace: "db", Workers: 2, ShutdownGrace: 5 * time.Second, MemberInitImage: "img"}
	var ready readiness
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runController(ctx, o, &clients{kube: kube, etcdClusters: etcd}, metrics, &ready, quietLog())
	}()

	c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "demo"}, Spec: api.EtcdClusterSpec{Size: 3}}
	if _, err := etcd.EtcdV1alpha1().EtcdClusters("db").Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating cluster: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := kube.CoreV1().Services("db").Get(ctx, member.ClientServiceName("demo"), metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client Service was never created: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if err := ready.check(nil); err != nil {
		t.Errorf("readiness of a leader that ran a pass = %v, want ready", err)
	}
	if got := desiredMembers(t, reg); got != "db/demo=3" {
		t.Errorf("members desired while leading: %q, want db/demo=3", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runController = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("runController did not return after cancel")
	}
	if got := desiredMembers(t, reg); got != "" {
		t.Errorf("members desired once the controller stopped: %q, want no cluster", got)
	}
}

// desiredMembers is what reg's etcd_operator_cluster_members_desired says, as
// namespace/name=value, space-separated.
func desiredMembers(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != "etcd_operator_cluster_members_desired" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, fmt.Sprintf("%s/%s=%g", labels["namespace"], labels["name"], m.GetGauge().GetValue()))
		}
	}
	return strings.Join(out, " ")
}

// TestRegistryExportsLiveHeap: the scale bench tells a leak from garbage by the live heap
// (what the last collection kept), so the operator exports it beside the default Go metrics.
func TestRegistryExportsLiveHeap(t *testing.T) {
	runtime.GC() // the live heap is known once a collection has run
	families, err := newOperatorRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			values[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	for _, name := range []string{"go_gc_heap_live_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines"} {
		if v, ok := values[name]; !ok || v <= 0 {
			t.Errorf("%s = %v (exported: %v), want a positive gauge", name, v, ok)
		}
	}
}
