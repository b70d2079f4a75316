package controller

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A burst of events across many clusters reaches each cluster's own loop; passes of one
// cluster never overlap and see the cluster's updates in order; every cluster gets a pass
// after its last event.
func TestBurstReachesEachClusterInOrder(t *testing.T) {
	const (
		namespaces = 5
		clusters   = 50
		updates    = 20
	)
	s := newFakeSyncer()
	// Longer than the gap between two events of a cluster, so that passes which were not
	// serialized would overlap.
	s.work = 20 * time.Millisecond
	e := newEnv(t, s, nil)
	s.observe = e.seqObserver

	type ref struct{ ns, name string }
	refs := make([]ref, 0, clusters)
	keys := make([]string, 0, clusters)
	for i := range clusters {
		r := ref{fmt.Sprintf("ns-%d", i%namespaces), fmt.Sprintf("etcd-%d", i)}
		refs, keys = append(refs, r), append(keys, objectKey(r.ns, r.name))
	}
	// Each cluster's writer issues its updates back to back, waiting only until the cache has
	// the previous one: the fake clientset's watch buffers just 100 events and panics when
	// full, which a real apiserver would not do. Clusters are written concurrently.
	var writers sync.WaitGroup
	for _, r := range refs {
		writers.Go(func() {
			for seq := 0; seq <= updates; seq++ {
				if seq == 0 {
					e.createCluster(t, r.ns, r.name)
				} else if err := e.setSeq(r.ns, r.name, seq); err != nil {
					t.Errorf("updating %s/%s: %v", r.ns, r.name, err)
					return
				}
				deadline := time.Now().Add(10 * time.Second)
				for e.seqObserver(r.ns, r.name) != seq {
					if time.Now().After(deadline) {
						t.Errorf("%s/%s: seq %d never reached the cache", r.ns, r.name, seq)
						return
					}
					time.Sleep(50 * time.Microsecond) // polling interval
				}
			}
		})
	}
	writers.Wait()

	eventually(t, 20*time.Second, "a pass of every cluster to see its last update", func() bool {
		for _, k := range keys {
			if s.maxObserved(k) != updates {
				return false
			}
		}
		return true
	})

	s.mu.Lock()
	overlaps, passed := s.overlaps, len(s.passes)
	s.mu.Unlock()
	if overlaps != 0 {
		t.Errorf("%d passes overlapped another pass of the same cluster", overlaps)
	}
	if passed != clusters {
		t.Errorf("passes ran for %d keys, want %d", passed, clusters)
	}
	total := 0
	for _, k := range keys {
		recs := s.records(k)
		total += len(recs)
		for i := 1; i < len(recs); i++ {
			if recs[i].observed < recs[i-1].observed {
				t.Errorf("%s: pass %d saw seq %d after pass %d saw %d", k, i+1, recs[i].observed, i, recs[i-1].observed)
			}
		}
		if running, _ := e.loopState(k); !running {
			t.Errorf("%s has no running loop", k)
		}
	}
	if got := testutil.ToFloat64(e.metrics.loops["EtcdCluster"]); got != clusters {
		t.Errorf("clusters managed gauge = %v, want %d", got, clusters)
	}
	t.Logf("%d events coalesced into %d passes", clusters*(updates+1), total)
}

// Deleting an EtcdCluster stops its loop, and the Syncer is told to forget it once its last
// pass is over; a new cluster of the same name gets a new loop. The Syncer forgets the other
// clusters when the controller stops.
func TestDeletedClusterLoopStops(t *testing.T) {
	s := newFakeSyncer()
	e := newEnv(t, s, nil)
	s.observe = e.seqObserver
	key := objectKey("default", "doomed")

	e.createCluster(t, "default", "doomed")
	e.createCluster(t, "default", "survivor")
	eventually(t, 5*time.Second, "first passes", func() bool {
		return s.passCount(key) > 0 && s.passCount(objectKey("default", "survivor")) > 0
	})

	err := e.etcd.EtcdV1alpha1().EtcdClusters("default").Delete(context.Background(), "doomed", metav1.DeleteOptions{})
	if err != nil {
		t.Fatalf("deleting cluster: %v", err)
	}
	eventually(t, 5*time.Second, "the deleted cluster's loop to exit", func() bool {
		running, exiting := e.loopState(key)
		return !running && !exiting
	})
	if running, _ := e.loopState(objectKey("default", "survivor")); !running {
		t.Error("the other cluster's loop stopped too")
	}
	if got := testutil.ToFloat64(e.metrics.loops["EtcdCluster"]); got != 1 {
		t.Errorf("clusters managed gauge = %v, want 1", got)
	}
	if got, passes := s.forgotten(key), s.passCount(key); len(got) != 1 || got[0] != passes {
		t.Errorf("the deleted cluster was forgotten after %v passes, want once, after all %d", got, passes)
	}
	if got := s.forgotten(objectKey("default", "survivor")); len(got) != 0 {
		t.Errorf("the other cluster was forgotten while its loop runs: %v", got)
	}

	before := s.passCount(key)
	e.createCluster(t, "default", "doomed")
	eventually(t, 5*time.Second, "a pass of the recreated cluster", func() bool {
		running, _ := e.loopState(key)
		return running && s.passCount(key) > before
	})
	e.stop(t)
	if got := s.forgotten(objectKey("default", "survivor")); len(got) != 1 {
		t.Errorf("after the controller stopped, the running cluster was forgotten %d times, want once", len(got))
	}
	if s.forgotInFlight != 0 {
		t.Errorf("%d Forget calls while a pass of the cluster ran", s.forgotInFlight)
	}
}

// Pod events reach the loop of the cluster named by the pod's controller ownerReference.
func TestPodEventWakesOwnerCluster(t *testing.T) {
	s := newFakeSyncer()
	e := newEnv(t, s, nil)
	pods := e.inf.Kube().Core().V1().Pods().Lister()
	// A pass observes how many pods of its own cluster the cache holds.
	s.observe = func(namespace, name string) int {
		got, err := pods.Pods(namespace).List(labels.SelectorFromSet(labels.Set{member.LabelCluster: name}))
		if err != nil {
			return -1
		}
		return len(got)
	}
	e.createCluster(t, "db", "a")
	e.createCluster(t, "db", "b")
	keyA, keyB := objectKey("db", "a"), objectKey("db", "b")
	eventually(t, 5*time.Second, "first passes", func() bool {
		return s.lastObserved(keyA) == 0 && s.lastObserved(keyB) == 0
	})
	passesB := s.passCount(keyB)

	owner, err := e.etcd.EtcdV1alpha1().EtcdClusters("db").Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting cluster: %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "db", Name: member.Name("a", 0),
		Labels: member.ClusterLabels("a"),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner,
			api.SchemeGroupVersion.WithKind("EtcdCluster"))},
	}}
	if _, err := e.kube.CoreV1().Pods("db").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	eventually(t, 5*time.Second, "a pass of the owner that sees the pod", func() bool {
		return s.lastObserved(keyA) == 1
	})
	if got := s.passCount(keyB); got != passesB {
		t.Errorf("cluster b ran %d passes after a pod of a was created, want none", got-passesB)
	}

	if err := e.kube.CoreV1().Pods("db").Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	eventually(t, 5*time.Second, "a pass of the owner after the pod is deleted", func() bool {
		return s.lastObserved(keyA) == 0
	})
}

// After shutdown every goroutine the controller and informers started has exited.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newFakeSyncer()
	e := newEnv(t, s, func(c *Config) { c.ShutdownGrace = time.Second })
	for i := range 10 {
		e.createCluster(t, "default", fmt.Sprintf("c%d", i))
	}
	eventually(t, 5*time.Second, "every cluster's first pass", func() bool {
		for i := range 10 {
			if s.passCount(objectKey("default", fmt.Sprintf("c%d", i))) == 0 {
				return false
			}
		}
		return true
	})
	e.stop(t)

	var now int
	deadline := time.Now().Add(5 * time.Second)
	for now = runtime.NumGoroutine(); now > before && time.Now().Before(deadline); now = runtime.NumGoroutine() {
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronization
	}
	if now > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after shutdown, %d before:\n%s", now, before, buf[:runtime.Stack(buf, true)])
	}
}
