package cluster

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// One installation drives a cluster; another leaves it alone (no object made, no status
// written) and says so once; once the first stops renewing the cluster's Lease, the other
// takes the cluster over, and the first, back, leaves it alone in turn.
func TestInstallationsDriveAClusterOneAtATime(t *testing.T) {
	f := newFixture(t, newCluster(1))
	start := time.Now()
	clock := start
	installation := func(name string) *Reconciler {
		d := f.deps
		d.Installation = name
		r := NewReconciler(d)
		r.now = func() time.Time { return clock }
		return r
	}
	a, b := installation("ns-a/etcd-operator"), installation("ns-b/etcd-operator")
	ctx := context.Background()
	sync := func(r *Reconciler) {
		t.Helper()
		if _, err := r.Sync(ctx, "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	writes := func() int {
		return len(f.actions("create", "pods")) + len(f.applied("services")) + len(f.actions("update", "etcdclusters"))
	}
	holder := func() string {
		t.Helper()
		l, err := f.kube.CoordinationV1().Leases("ns").Get(ctx, "demo-operator", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}

	sync(a)
	if holder() != "ns-a/etcd-operator" || writes() == 0 {
		t.Fatalf("first installation: holder %q, %d writes; want it to hold the cluster and act", holder(), writes())
	}
	before := writes()
	clock = start.Add(DefaultTakeoverAfter / 2)
	sync(b)
	sync(b)
	if writes() != before {
		t.Errorf("the second installation wrote %d times to a cluster the first drives", writes()-before)
	}
	if n := countEvents(f, EventInstallationConflict); n != 1 {
		t.Errorf("%d InstallationConflict Events over two passes, want 1", n)
	}

	clock = start.Add(DefaultTakeoverAfter + time.Second)
	sync(b)
	if holder() != "ns-b/etcd-operator" {
		t.Errorf("holder %q after the first installation stopped renewing, want the second", holder())
	}
	if n := countEvents(f, EventInstallationTakeover); n != 1 {
		t.Errorf("%d InstallationTakeover Events, want 1", n)
	}
	before = writes()
	sync(a)
	if writes() != before || holder() != "ns-b/etcd-operator" {
		t.Errorf("the first installation, back, wrote %d times; holder %q", writes()-before, holder())
	}
}

// Each installation judges the other's Lease by the longer of its own takeover bound and the
// one the holder wrote in the Lease, on every renewal: an installation with a shorter bound
// does not take over a cluster whose holder renews it within its own, longer one.
func TestTakeoverWaitsForTheHoldersBound(t *testing.T) {
	f := newFixture(t, newCluster(1))
	start := time.Now()
	clock := start
	installation := func(name string, takeover time.Duration) *Reconciler {
		d := f.deps
		d.Installation, d.TakeoverAfter = name, takeover
		r := NewReconciler(d)
		r.now = func() time.Time { return clock }
		return r
	}
	slow, quick := installation("ns-a/etcd-operator", 10*time.Minute), installation("ns-b/etcd-operator", time.Minute)
	ctx := context.Background()
	lease := func() (string, int32) {
		t.Helper()
		l, err := f.kube.CoordinationV1().Leases("ns").Get(ctx, "demo-operator", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseDurationSeconds, 0)
	}
	sync := func(r *Reconciler) {
		t.Helper()
		if _, err := r.Sync(ctx, "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	sync(slow)
	clock = start.Add(4 * time.Minute) // past a third of its bound: renewed
	sync(slow)
	clock = start.Add(6 * time.Minute) // 2 minutes unrenewed: past the quick one's bound only
	sync(quick)
	if holder, _ := lease(); holder != "ns-a/etcd-operator" {
		t.Errorf("holder %q two minutes after a renewal by an installation whose bound is 10m, want it kept", holder)
	}
	clock = start.Add(15 * time.Minute)
	sync(quick)
	if holder, secs := lease(); holder != "ns-b/etcd-operator" || secs != 60 {
		t.Errorf("lease held by %q for %ds after 11 minutes unrenewed, want the quick installation with its own 60s", holder, secs)
	}
}

// The cluster's Lease is read from the cache, and read again from the API server before it is
// written: a cache that lags behind a renewal by the holder never makes this installation
// take over a cluster the holder still drives. A Lease the cache has not seen yet is asked of
// the API server, never created twice.
func TestInstallationLeaseFromTheCache(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	f := newFixture(t, newCluster(1))
	f.with(func(d *Deps) {
		d.Installation = "ns-a/etcd-operator"
		d.Leases = f.kinf.Coordination().V1().Leases().Lister()
	})
	f.r.now = func() time.Time { return now }
	held := f.r.installationLease(newCluster(1), "ns-b/etcd-operator", now)
	if _, err := f.kube.CoordinationV1().Leases("ns").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := held.DeepCopy()
	stale.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-2 * DefaultTakeoverAfter)}
	if err := f.kinf.Coordination().V1().Leases().Informer().GetIndexer().Add(stale); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	l, err := f.kube.CoordinationV1().Leases("ns").Get(ctx, "demo-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "ns-b/etcd-operator" || len(f.actions("update", "leases")) != 0 {
		t.Errorf("holder %q, %d lease updates after a cache that missed the holder's renewal; want the holder kept, nothing written",
			h, len(f.actions("update", "leases")))
	}

	f.kube.ClearActions()
	if err := f.kinf.Coordination().V1().Leases().Informer().GetIndexer().Delete(stale); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "leases")); n != 0 || len(f.actions("get", "leases")) != 1 {
		t.Errorf("a Lease the cache has not seen: %d creates, %d gets; want it read from the API server, not created",
			n, len(f.actions("get", "leases")))
	}
}
