package controller

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// configMapGauge is the loop gauge of the second kind the tests register.
var configMapGauge = LoopGauge{Kind: "ConfigMap", Name: "test_configmaps_managed", Help: "ConfigMaps with a loop."}

// configMapKind registers managed ConfigMaps as a second kind, with s as their Syncer: it
// stands for a kind such as a backup. Pods whose controller ownerReference is a ConfigMap
// belong to it; the Pod informer is the one the EtcdCluster kind shares.
func configMapKind(inf *Informers, s Syncer) Kind {
	maps := inf.Kube().Core().V1().ConfigMaps()
	return Kind{
		Name:     "ConfigMap",
		Informer: maps.Informer(),
		Exists: ListerExists(func(namespace, name string) (*corev1.ConfigMap, error) {
			return maps.Lister().ConfigMaps(namespace).Get(name)
		}),
		Syncer: s,
		Owned:  []Owned{{Informer: inf.Kube().Core().V1().Pods().Informer(), KeyOf: OwnerKey("", "ConfigMap")}},
	}
}

// Two kinds on one controller: each object of each kind gets its own loop and its own
// passes, an owned object wakes only its owner of the right kind, and deleting an object
// stops only its loop, even when an object of the other kind has the same name.
func TestTwoKindsEachObjectOwnLoop(t *testing.T) {
	clusters, maps := newFakeSyncer(), newFakeSyncer()
	e := newKindsEnv(t, clusters, func(inf *Informers) []Kind {
		return []Kind{clusterKind(inf, clusters), configMapKind(inf, SyncFunc(maps.Sync))}
	}, []LoopGauge{clusterGauge, configMapGauge}, nil)
	clusters.observe = e.seqObserver
	// A ConfigMap's pass observes how many pods it owns.
	podsOf := OwnerKey("", "ConfigMap")
	maps.observe = func(namespace, name string) int {
		pods, err := e.inf.Kube().Core().V1().Pods().Lister().Pods(namespace).List(labels.Everything())
		if err != nil {
			return -1
		}
		n := 0
		for _, p := range pods {
			if key, ok := podsOf(p); ok && key == objectKey(namespace, name) {
				n++
			}
		}
		return n
	}

	e.createCluster(t, "db", "a")
	e.createCluster(t, "db", "b")
	e.createConfigMap(t, "db", "a")
	e.createConfigMap(t, "db", "c")
	a, b, c := objectKey("db", "a"), objectKey("db", "b"), objectKey("db", "c")
	eventually(t, 5*time.Second, "a first pass of every object of each kind", func() bool {
		return clusters.lastObserved(a) == 0 && clusters.lastObserved(b) == 0 &&
			maps.lastObserved(a) == 0 && maps.lastObserved(c) == 0
	})
	if clusters.passCount(c) != 0 || maps.passCount(b) != 0 {
		t.Errorf("a kind's Sync ran for an object of the other kind: EtcdCluster %s %d passes, ConfigMap %s %d passes",
			c, clusters.passCount(c), b, maps.passCount(b))
	}
	for _, l := range []struct{ kind, key string }{{"EtcdCluster", a}, {"EtcdCluster", b}, {"ConfigMap", a}, {"ConfigMap", c}} {
		if running, _ := e.kindLoopState(l.kind, l.key); !running {
			t.Errorf("%s %s has no running loop", l.kind, l.key)
		}
	}
	e.wantLoopGauges(t, 2, 2)

	// A pod owned by ConfigMap a wakes that ConfigMap's loop, not EtcdCluster a's.
	clusterPasses := clusters.passCount(a)
	e.createPodOwnedByConfigMap(t, "db", "a")
	eventually(t, 5*time.Second, "a pass of ConfigMap a that sees its pod", func() bool { return maps.lastObserved(a) == 1 })
	if got := clusters.passCount(a); got != clusterPasses {
		t.Errorf("EtcdCluster a ran %d passes after a pod of ConfigMap a was created, want none", got-clusterPasses)
	}

	// Deleting ConfigMap a stops its loop alone.
	if err := e.kube.CoreV1().ConfigMaps("db").Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting ConfigMap: %v", err)
	}
	eventually(t, 5*time.Second, "ConfigMap a's loop to exit", func() bool {
		running, exiting := e.kindLoopState("ConfigMap", a)
		return !running && !exiting
	})
	for _, l := range []struct{ kind, key string }{{"EtcdCluster", a}, {"EtcdCluster", b}, {"ConfigMap", c}} {
		if running, _ := e.kindLoopState(l.kind, l.key); !running {
			t.Errorf("%s %s's loop stopped with ConfigMap a's", l.kind, l.key)
		}
	}
	e.wantLoopGauges(t, 2, 1)
	// EtcdCluster a's loop still runs passes.
	if err := e.setSeq("db", "a", 1); err != nil {
		t.Fatalf("updating cluster: %v", err)
	}
	eventually(t, 5*time.Second, "a pass of EtcdCluster a after the update", func() bool { return clusters.lastObserved(a) == 1 })

	for name, s := range map[string]*fakeSyncer{"EtcdCluster": clusters, "ConfigMap": maps} {
		s.mu.Lock()
		if s.overlaps != 0 {
			t.Errorf("%d passes of a %s overlapped another pass of the same object", s.overlaps, name)
		}
		s.mu.Unlock()
	}
}

// createConfigMap creates a ConfigMap labelled as managed, so the informers see it.
func (e *env) createConfigMap(t *testing.T, namespace, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels: map[string]string{member.LabelManagedBy: member.ManagedByValue}}}
	if _, err := e.kube.CoreV1().ConfigMaps(namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", namespace, name, err)
	}
}

// createPodOwnedByConfigMap creates a managed pod whose controller is the ConfigMap name.
func (e *env) createPodOwnedByConfigMap(t *testing.T, namespace, name string) {
	t.Helper()
	owner, err := e.kube.CoreV1().ConfigMaps(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting ConfigMap: %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name + "-pod",
		Labels:          map[string]string{member.LabelManagedBy: member.ManagedByValue},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))},
	}}
	if _, err := e.kube.CoreV1().Pods(namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
}

// wantLoopGauges checks the loop gauges of both kinds.
func (e *env) wantLoopGauges(t *testing.T, clusters, maps int) {
	t.Helper()
	if got := testutil.ToFloat64(e.metrics.loops["EtcdCluster"]); got != float64(clusters) {
		t.Errorf("EtcdCluster loop gauge = %v, want %d", got, clusters)
	}
	if got := testutil.ToFloat64(e.metrics.loops["ConfigMap"]); got != float64(maps) {
		t.Errorf("ConfigMap loop gauge = %v, want %d", got, maps)
	}
}

// New refuses a kind registered twice and a kind without a declared loop gauge.
func TestNewRefusesBadKinds(t *testing.T) {
	tests := map[string]struct {
		gauges []LoopGauge
		kinds  func(*Informers) []Kind
	}{
		"kind registered twice": {[]LoopGauge{clusterGauge}, func(inf *Informers) []Kind {
			return []Kind{clusterKind(inf, newFakeSyncer()), clusterKind(inf, newFakeSyncer())}
		}},
		"kind without a loop gauge": {[]LoopGauge{clusterGauge}, func(inf *Informers) []Kind {
			return []Kind{clusterKind(inf, newFakeSyncer()), configMapKind(inf, newFakeSyncer())}
		}},
		"kind without a Syncer": {[]LoopGauge{clusterGauge}, func(inf *Informers) []Kind {
			return []Kind{clusterKind(inf, nil)}
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := NewMetrics(prometheus.NewRegistry(), tt.gauges...)
			if err != nil {
				t.Fatalf("NewMetrics: %v", err)
			}
			inf := NewInformers(k8sfake.NewClientset(), etcdfake.NewSimpleClientset(), "", 0)
			if _, err := New(Config{Kinds: tt.kinds(inf), Metrics: m, Log: logrus.NewEntry(logrus.New())}); err == nil {
				t.Error("New accepted the kinds")
			}
		})
	}
}

// pkg/controller is the machinery every kind shares: it must not depend on any one kind's
// reconciler, or on the operator that wires the kinds.
func TestControllerImportsNoKind(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "list", "-deps", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	const module = "github.com/etcd-operator/etcd-operator/"
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"pkg/cluster", "pkg/operator"} {
			if dep == module+banned || strings.HasPrefix(dep, module+banned+"/") {
				t.Errorf("pkg/controller depends on %s", dep)
			}
		}
	}
}
