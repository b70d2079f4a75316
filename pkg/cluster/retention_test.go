package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// deleteCluster is a cluster of three members on claims, whenDeleted Delete.
func deleteCluster() *api.EtcdCluster {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	c.Spec.Storage.RetentionPolicy.WhenDeleted = api.RetentionDelete
	return c
}

// markedClaims are the members' claims as the operator makes them, bound and marked with
// their member, with owned the cluster's ownerReference (an earlier operator's claims).
func markedClaims(c *api.EtcdCluster, owned bool) []runtime.Object {
	var out []runtime.Object
	for ord := range 3 {
		pvc := member.Claim(c, ord)
		pvc.UID = types.UID(fmt.Sprintf("claim-uid-%d", ord))
		pvc.Annotations[member.AnnotationMemberID] = member.FormatID(uint64(101 + ord))
		pvc.Status.Phase = corev1.ClaimBound
		if owned {
			pvc.OwnerReferences = []metav1.OwnerReference{member.OwnerReference(c)}
		}
		out = append(out, pvc)
	}
	return out
}

// refresh puts the clientsets' clusters and claims in the caches, as the informers would.
func (f *fixture) refresh() {
	f.t.Helper()
	claims, err := f.kube.CoreV1().PersistentVolumeClaims("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	idx := f.kinf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	objs := make([]any, 0, len(claims.Items))
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	if err := idx.Replace(objs, ""); err != nil {
		f.t.Fatal(err)
	}
	clusters, err := f.client.EtcdV1alpha1().EtcdClusters("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	objs = objs[:0]
	for i := range clusters.Items {
		objs = append(objs, &clusters.Items[i])
	}
	if err := f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Replace(objs, ""); err != nil {
		f.t.Fatal(err)
	}
}

// deleteAsTheAPIServerWould marks the cluster deleted, with whenDeleted set to policy in the
// same instant: no pass runs in between.
func (f *fixture) deleteAsTheAPIServerWould(policy api.RetentionPolicyType) {
	f.t.Helper()
	c, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	c.Spec.Storage.RetentionPolicy.WhenDeleted = policy
	c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if _, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// finishAsTheAPIServerWould runs passes until the loop would stop, then, if the cluster has
// no finalizer left, removes it and deletes what the garbage collector deletes with it: every
// claim that names it as an owner. It reports whether the cluster is gone.
func (f *fixture) finishAsTheAPIServerWould() bool {
	f.t.Helper()
	for range 5 {
		_, err := f.r.Sync(context.Background(), "ns", "demo")
		f.refresh()
		if errors.Is(err, ErrGone) {
			break
		}
		if err != nil {
			f.t.Fatalf("Sync: %v", err)
		}
	}
	ctx := context.Background()
	c, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(c.Finalizers) > 0 {
		return false
	}
	if err := f.client.EtcdV1alpha1().EtcdClusters("ns").Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	claims, err := f.kube.CoreV1().PersistentVolumeClaims("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, pvc := range claims.Items {
		if slices.ContainsFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == c.UID }) {
			if err := f.kube.CoreV1().PersistentVolumeClaims("ns").Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	f.refresh()
	return true
}

// claimNames are the claims left in the namespace, with their member marks.
func (f *fixture) claimNames() []string {
	f.t.Helper()
	claims, err := f.kube.CoreV1().PersistentVolumeClaims("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, pvc := range claims.Items {
		out = append(out, pvc.Name+"="+pvc.Annotations[member.AnnotationMemberID])
	}
	slices.Sort(out)
	return out
}

var allMarked = []string{"data-demo-0=65", "data-demo-1=66", "data-demo-2=67"}

// A switch to Retain holds from the moment it is written: a cluster deleted right after it,
// before any pass could see it, goes and leaves every claim with its mark. So it does for the
// claims an earlier operator made owned, whichever pass of the migration the switch follows.
func TestRetainHoldsFromTheMomentItIsWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		// owned: the claims carry the cluster's ownerReference (an earlier operator's);
		// otherwise they are as CreateClaim makes them, the cluster with its finalizer.
		owned  bool
		passes int
	}{
		{"claims made by the operator, no pass since the switch", false, 0},
		{"claims made by the operator, passes before the switch", false, 2},
		{"owned claims, switched after the pass that added the finalizer", true, 1},
		{"owned claims, switched after the pass that disowned them", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := deleteCluster()
			if !tc.owned {
				c.Finalizers = []string{api.FinalizerClaims}
			}
			f := newFixture(t, append(markedClaims(c, tc.owned), c)...)
			for range tc.passes {
				if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
					t.Fatalf("Sync: %v", err)
				}
				f.refresh()
			}
			f.deleteAsTheAPIServerWould(api.RetentionRetain)
			if !f.finishAsTheAPIServerWould() {
				t.Fatal("the cluster is never let go")
			}
			if got := f.claimNames(); !slices.Equal(got, allMarked) {
				t.Errorf("claims left %v, want every claim with its mark %v", got, allMarked)
			}
			if n := len(f.actions("delete", "persistentvolumeclaims")); n != 0 {
				t.Errorf("%d claims deleted under Retain", n)
			}
			if !strings.Contains(drain(f.recorder), string(EventClaimsRetained)) {
				t.Error("no ClaimsRetained event")
			}
		})
	}
}

// Under Delete the cluster deleted takes its claims along (each deletion an Event, with the
// claim's UID as precondition), then lets go; nothing is created, applied or rolled on the
// way. Another cluster's claim of a member's name is left.
func TestDeletePolicyDeletesClaimsThenLetsGo(t *testing.T) {
	c := deleteCluster()
	c.Finalizers = []string{"someone.else/finalizer", api.FinalizerClaims}
	claims := markedClaims(c, false)
	other := c.DeepCopy()
	other.UID = "uid-other"
	theirs := member.Claim(c, 4)
	theirs.UID, theirs.OwnerReferences = "claim-uid-4", []metav1.OwnerReference{member.OwnerReference(other)}
	f := newFixture(t, append(claims, c, theirs)...)
	f.deleteAsTheAPIServerWould(api.RetentionDelete)
	f.kube.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); !errors.Is(err, ErrGone) {
		t.Fatalf("Sync = %v, want ErrGone once the claims are deleted", err)
	}
	if got := f.claimNames(); !slices.Equal(got, []string{"data-demo-4="}) {
		t.Errorf("claims left %v, want only the other cluster's data-demo-4", got)
	}
	for _, a := range f.actions("delete", "persistentvolumeclaims") {
		opts := a.(k8stesting.DeleteActionImpl).DeleteOptions
		if opts.Preconditions == nil || opts.Preconditions.UID == nil {
			t.Errorf("claim %s deleted without a UID precondition", a.(k8stesting.DeleteActionImpl).Name)
		}
	}
	for _, verb := range []string{"create", "patch", "update"} {
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == verb {
				t.Errorf("a cluster being deleted got %s %s", verb, a.GetResource().Resource)
			}
		}
	}
	got, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, []string{"someone.else/finalizer"}) {
		t.Errorf("finalizers %v, want only the other controller's", got.Finalizers)
	}
	if n := strings.Count(drain(f.recorder), string(EventClaimDeleted)); n != 3 {
		t.Errorf("%d ClaimDeleted events, want 3", n)
	}
}

// A claim the API server refuses to delete keeps the cluster, with its finalizer, and status
// and an Event say why; a switch to Retain then lets the cluster go with every claim.
func TestClaimDeletionRefusedKeepsTheCluster(t *testing.T) {
	c := deleteCluster()
	c.Finalizers = []string{api.FinalizerClaims}
	f := newFixture(t, append(markedClaims(c, false), c)...)
	f.kube.PrependReactor("delete", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"},
			a.(k8stesting.DeleteAction).GetName(), errors.New("denied by the admission webhook keep-data"))
	})
	f.deleteAsTheAPIServerWould(api.RetentionDelete)
	requeue, err := f.r.Sync(context.Background(), "ns", "demo")
	if err != nil || requeue != whileRefused {
		t.Fatalf("Sync = %v, %v; want a wait of %v", requeue, err, whileRefused)
	}
	got, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasClaimsFinalizer(got) {
		t.Fatal("finalizer removed while a claim could not be deleted")
	}
	deg := meta.FindStatusCondition(got.Status.Conditions, string(api.ConditionDegraded))
	if got.Status.Phase != api.PhaseDeleting || deg == nil || deg.Reason != string(api.ReasonClaimDeletionRefused) ||
		!strings.Contains(deg.Message, "keep-data") {
		t.Errorf("phase %s, Degraded %+v; want Deleting, ClaimDeletionRefused quoting the API server", got.Status.Phase, deg)
	}
	if !strings.Contains(drain(f.recorder), string(EventClaimDeletionRefused)) {
		t.Error("no ClaimDeletionRefused event")
	}
	f.refresh()
	f.deleteAsTheAPIServerWould(api.RetentionRetain)
	if !f.finishAsTheAPIServerWould() {
		t.Fatal("the cluster is never let go after the switch to Retain")
	}
	if got := f.claimNames(); !slices.Equal(got, allMarked) {
		t.Errorf("claims left %v, want %v", got, allMarked)
	}
}

// The migration of owned claims, and the finalizer's upkeep, in the order that is safe at
// every instant: the finalizer before any claim is disowned under Delete, every claim
// disowned before the finalizer goes under Retain; the same on a cluster being deleted.
func TestRetentionSteps(t *testing.T) {
	owned := []string{"DisownClaim data-demo-0", "DisownClaim data-demo-1", "DisownClaim data-demo-2"}
	for _, tc := range []struct {
		name      string
		policy    api.RetentionPolicyType
		emptyDir  bool
		finalizer bool
		owned     bool
		deleting  bool
		want      []string
	}{
		{"Delete, owned claims: the finalizer first, and the pass ends", api.RetentionDelete, false, false, true, false,
			[]string{"SetClaimsFinalizer demo true"}},
		{"Delete with the finalizer: then the claims are disowned", api.RetentionDelete, false, true, true, false, owned},
		{"Delete, nothing to do", api.RetentionDelete, false, true, false, false, nil},
		{"Retain, owned claims: disowned, then the finalizer removed", api.RetentionRetain, false, true, true, false,
			append(slices.Clone(owned), "SetClaimsFinalizer demo false")},
		{"Retain, nothing to do", api.RetentionRetain, false, false, false, false, nil},
		{"emptyDir: no finalizer", api.RetentionDelete, true, true, false, false, []string{"SetClaimsFinalizer demo false"}},
		{"deleted under Retain, owned claims: disowned, then let go", api.RetentionRetain, false, true, true, true,
			append(slices.Clone(owned), "SetClaimsFinalizer demo false")},
		{"deleted under Delete: the claims deleted, then let go", api.RetentionDelete, false, true, false, true,
			[]string{"DeleteClaim data-demo-0", "DeleteClaim data-demo-1", "DeleteClaim data-demo-2", "SetClaimsFinalizer demo false"}},
		{"deleted without the finalizer: nothing", api.RetentionDelete, false, false, true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := deleteCluster()
			c.Spec.Storage.RetentionPolicy.WhenDeleted = tc.policy
			if tc.emptyDir {
				c.Spec.Storage = member.LegacyStorage()
			}
			if tc.finalizer {
				c.Finalizers = []string{api.FinalizerClaims}
			}
			if tc.deleting {
				c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			f := newFixture(t, append(markedClaims(deleteCluster(), tc.owned), c)...)
			fa := &fakeActor{result: Result{Changed: true}}
			f.r.control = fa
			_, err := f.r.Sync(context.Background(), "ns", "demo")
			if tc.deleting && !errors.Is(err, ErrGone) {
				t.Errorf("Sync = %v, want ErrGone", err)
			}
			var got []string
			for _, call := range fa.calls {
				if tc.deleting || strings.HasPrefix(call, "DisownClaim") || strings.HasPrefix(call, "SetClaimsFinalizer") {
					got = append(got, call)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
		})
	}
}

// A failed disown keeps the finalizer: a cluster deleted then still waits for the operator.
func TestFailedDisownKeepsTheFinalizer(t *testing.T) {
	c := deleteCluster()
	c.Spec.Storage.RetentionPolicy.WhenDeleted = api.RetentionRetain
	c.Finalizers = []string{api.FinalizerClaims}
	f := newFixture(t, append(markedClaims(c, true), c)...)
	fa := &fakeActor{err: errors.New("conflict")}
	f.r.control = fa
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err == nil {
		t.Error("Sync succeeded with a claim still owned")
	}
	if slices.ContainsFunc(fa.calls, func(s string) bool { return strings.HasPrefix(s, "SetClaimsFinalizer") }) {
		t.Errorf("finalizer changed with a claim still owned: %q", fa.calls)
	}
}

// A cluster deleted with --cascade=orphan (the orphan finalizer) keeps its claims under
// Delete: its member pods keep running on them. An Event says so.
func TestOrphanDeletionKeepsClaims(t *testing.T) {
	c := deleteCluster()
	c.Finalizers = []string{metav1.FinalizerOrphanDependents, api.FinalizerClaims}
	f := newFixture(t, append(markedClaims(c, false), c)...)
	f.deleteAsTheAPIServerWould(api.RetentionDelete)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); !errors.Is(err, ErrGone) {
		t.Fatalf("Sync = %v, want ErrGone once the finalizer is removed", err)
	}
	if n := len(f.actions("delete", "persistentvolumeclaims")); n != 0 {
		t.Errorf("%d claims deleted under pods the deletion orphans", n)
	}
	if got := f.claimNames(); !slices.Equal(got, allMarked) {
		t.Errorf("claims left %v, want every claim %v", got, allMarked)
	}
	if ev := drain(f.recorder); !strings.Contains(ev, string(EventClaimsRetained)) || !strings.Contains(ev, "--cascade=orphan") {
		t.Errorf("events %q, want ClaimsRetained naming the orphaning", ev)
	}
}
