package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/etcd-operator/etcd-operator/pkg/generated/informers/externalversions"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// testInitImage is the operator image of the fixture's reconciler; member pods built with it
// are up to date, so no rollout starts in tests about other rules.
const testInitImage = "etcd-operator:test"

// noEtcd fails the test if a pass dials etcd: with no running pod there is nobody to dial.
type noEtcd struct{ t *testing.T }

func (f noEtcd) New(endpoints []string, _ etcdutil.ConnConfig) (etcdutil.Client, error) {
	f.t.Errorf("unexpected etcd client for %v", endpoints)
	return nil, errors.New("no etcd in this test")
}

// noProbe is a member port that never answers: no member runs in these tests.
func noProbe(context.Context, string, tls.Certificate, *x509.CertPool, string) ([]*x509.Certificate, error) {
	return nil, errors.New("no member answers in this test")
}

type fixture struct {
	t        *testing.T
	kube     *kubefake.Clientset
	client   *fake.Clientset
	recorder *record.FakeRecorder
	deps     Deps
	r        *Reconciler
	kinf     kubeinformers.SharedInformerFactory
	cinf     informers.SharedInformerFactory
}

func newCluster(size int32) *api.EtcdCluster {
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: api.EtcdClusterSpec{Size: size, Version: api.DefaultVersion, Repository: api.DefaultRepository,
			Storage: member.LegacyStorage()},
	}
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	f := &fixture{t: t, recorder: record.NewFakeRecorder(100)}
	var kubeObjs, etcdObjs []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*api.EtcdCluster); ok {
			etcdObjs = append(etcdObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f.kube = kubefake.NewClientset(kubeObjs...)
	f.client = fake.NewSimpleClientset(etcdObjs...)
	f.kinf = kubeinformers.NewSharedInformerFactory(f.kube, 0)
	f.cinf = informers.NewSharedInformerFactory(f.client, 0)
	for _, o := range kubeObjs {
		switch o := o.(type) {
		case *corev1.Pod:
			_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.Service:
			_ = f.kinf.Core().V1().Services().Informer().GetIndexer().Add(o)
		case *discoveryv1.EndpointSlice:
			_ = f.kinf.Discovery().V1().EndpointSlices().Informer().GetIndexer().Add(o)
		case *policyv1.PodDisruptionBudget:
			_ = f.kinf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			_ = f.kinf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *networkingv1.NetworkPolicy:
			_ = f.kinf.Networking().V1().NetworkPolicies().Informer().GetIndexer().Add(o)
		}
	}
	for _, o := range etcdObjs {
		_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Add(o)
	}
	f.deps = Deps{
		KubeClient:        f.kube,
		EtcdClusterClient: f.client,
		Clusters:          f.cinf.Etcd().V1alpha1().EtcdClusters().Lister(),
		Pods:              f.kinf.Core().V1().Pods().Lister(),
		Services:          f.kinf.Core().V1().Services().Lister(),
		EndpointSlices:    f.kinf.Discovery().V1().EndpointSlices().Lister(),
		Budgets:           f.kinf.Policy().V1().PodDisruptionBudgets().Lister(),
		Claims:            f.kinf.Core().V1().PersistentVolumeClaims().Lister(),
		NetworkPolicies:   f.kinf.Networking().V1().NetworkPolicies().Lister(),
		OperatorPeer:      member.OperatorPeer("etcd-operator-system"),
		Recorder:          f.recorder,
		Etcd:              noEtcd{t},
		ProbeTLS:          noProbe,
		MemberInitImage:   testInitImage,
	}
	f.r = NewReconciler(f.deps)
	return f
}

// with changes the fixture's dependencies; the Reconciler is built anew from them.
func (f *fixture) with(change func(*Deps)) {
	change(&f.deps)
	f.r = NewReconciler(f.deps)
}

func (f *fixture) actions(verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range append(f.kube.Actions(), f.client.Actions()...) {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

// applied is the names of the objects of resource the pass applied (server-side apply, with
// the operator's field manager), in order.
func (f *fixture) applied(resource string) []string {
	var names []string
	for _, a := range f.actions("patch", resource) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			continue
		}
		if a, ok := a.(k8stesting.PatchActionImpl); ok && a.PatchOptions.FieldManager != FieldManager {
			f.t.Errorf("%s %s applied by field manager %q, want %q", resource, p.GetName(), a.PatchOptions.FieldManager, FieldManager)
		}
		names = append(names, p.GetName())
	}
	return names
}

func TestSyncBootstrapsSeed(t *testing.T) {
	c := newCluster(3)
	f := newFixture(t, c)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	names := f.applied("services")
	// Every member's address exists before its pod: the member Services come first.
	if !slices.Equal(names, []string{"demo", "demo-client", "demo-0", "demo-1", "demo-2"}) {
		t.Fatalf("created services %v, want peer, client and one per member", names)
	}
	creates := f.actions("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("created %d pods, want exactly the seed", len(creates))
	}
	pod := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	if pod.Name != "demo-0" || pod.Annotations[member.AnnotationClusterState] != string(etcdutil.ClusterStateNew) {
		t.Errorf("seed pod = %s state %q, want demo-0 state new", pod.Name, pod.Annotations[member.AnnotationClusterState])
	}
	if !metav1.IsControlledBy(pod, c) {
		t.Errorf("seed pod is not controlled by the cluster: %v", pod.OwnerReferences)
	}
	updates := f.actions("update", "etcdclusters")
	if len(updates) != 1 || updates[0].GetSubresource() != "status" {
		t.Fatalf("status updates = %v, want one through the status subresource", updates)
	}
	st := updates[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster).Status
	if st.Phase != api.PhaseBootstrapping {
		t.Errorf("phase = %s, want Bootstrapping", st.Phase)
	}
	prog := meta.FindStatusCondition(st.Conditions, string(api.ConditionProgressing))
	if prog == nil || prog.Reason != string(api.ReasonBootstrapping) || prog.ObservedGeneration != 1 {
		t.Errorf("Progressing = %+v, want Bootstrapping at generation 1", prog)
	}
	if st.Selector == "" || st.ClientURL != "http://demo-client.ns.svc:2379" {
		t.Errorf("selector %q clientURL %q", st.Selector, st.ClientURL)
	}
	if n := len(f.applied("poddisruptionbudgets")); n != 1 {
		t.Errorf("created %d disruption budgets, want 1", n)
	}
	if n := len(f.recorder.Events); n != 7 {
		t.Errorf("recorded %d events, want 7 (five services, the budget, one pod)", n)
	}
}

func TestSyncWritesStatusOnlyWhenChanged(t *testing.T) {
	c := newCluster(3)
	seed := member.Pod(c, member.Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "x")
	f := newFixture(t, c, seed, member.PeerService(c), member.ClientService(c),
		member.MemberService(c, 0), member.MemberService(c, 1), member.MemberService(c, 2))
	// pass runs a pass and feeds what it wrote back into the caches, as the informers would;
	// it returns the number of status writes and of objects created.
	pass := func() (statusWrites, creates int) {
		t.Helper()
		f.kube.ClearActions()
		f.client.ClearActions()
		if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		updates := f.actions("update", "etcdclusters")
		for _, u := range updates {
			_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Update(u.(k8stesting.UpdateAction).GetObject())
		}
		for _, a := range f.actions("create", "pods") {
			_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Add(a.(k8stesting.CreateAction).GetObject())
		}
		return len(updates), len(f.actions("create", "pods")) + len(f.applied("services"))
	}
	// The first two passes create the other members' pods ahead of their members and say so.
	if writes, creates := pass(); writes != 1 || creates != 1 {
		t.Fatalf("first pass wrote status %d times and created %d objects, want 1 and 1 (the next pod)", writes, creates)
	}
	if writes, creates := pass(); writes != 1 || creates != 1 {
		t.Fatalf("second pass wrote status %d times and created %d objects, want 1 and 1 (the last pod)", writes, creates)
	}
	// The third says the seed is starting.
	if writes, creates := pass(); writes != 1 || creates != 0 {
		t.Fatalf("third pass wrote status %d times and created %d objects, want 1 and 0", writes, creates)
	}
	if writes, creates := pass(); writes != 0 || creates != 0 {
		t.Errorf("a pass with nothing changed wrote status %d times and created %d objects", writes, creates)
	}
}

// The disruption budget keeps a majority of spec.size available, follows spec.size, and is
// put back when someone changes it.
func TestSyncKeepsDisruptionBudget(t *testing.T) {
	c := newCluster(5)
	old := member.DisruptionBudget(newCluster(3))
	f := newFixture(t, c, old, member.PeerService(c), member.ClientService(c))
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	updates := f.applied("poddisruptionbudgets")
	if len(updates) != 1 {
		t.Fatalf("%d budget updates, want 1", len(updates))
	}
	got, err := f.kube.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), updates[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.MinAvailable.IntValue() != 3 {
		t.Errorf("minAvailable %s for 5 members, want 3", got.Spec.MinAvailable.String())
	}
	// Shrinking from 5 to 3, quorum is still 3 of the 5 members that are there.
	shrinking := newCluster(3)
	shrinking.Status.Size = 5
	if m := member.DisruptionBudget(shrinking).Spec.MinAvailable.IntValue(); m != 3 {
		t.Errorf("minAvailable %d while 5 members shrink to 3, want 3", m)
	}

}

// A budget of the cluster's budget's name that the cluster does not own (without the
// operator's labels: the informer never lists it) is left alone and reported once.
func TestSyncLeavesForeignDisruptionBudget(t *testing.T) {
	c := newCluster(5)
	foreign := member.DisruptionBudget(c)
	foreign.OwnerReferences, foreign.Labels = nil, nil
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	if _, err := f.kube.PolicyV1().PodDisruptionBudgets(c.Namespace).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Errorf("Sync with a foreign budget: %v; the cluster runs on without one", err)
	}
	if n := len(f.actions("update", "poddisruptionbudgets")) + len(f.applied("poddisruptionbudgets")); n != 0 {
		t.Errorf("a budget the cluster does not own was updated")
	}
	if n := len(f.actions("create", "pods")); n != 1 {
		t.Errorf("%d pods created; a foreign budget must not hold the cluster back", n)
	}
	var warned bool
	for len(f.recorder.Events) > 0 {
		e := <-f.recorder.Events
		warned = warned || strings.Contains(e, string(EventBudgetConflict))
	}
	if !warned {
		t.Error("no Event says the budget is someone else's")
	}
	// The next pass says nothing again and tries no write it knows will be refused.
	f.kube.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	if n := len(f.actions("create", "poddisruptionbudgets")) + len(f.actions("update", "poddisruptionbudgets")) + len(f.applied("poddisruptionbudgets")); n != 0 {
		t.Errorf("second pass wrote the foreign budget %d times", n)
	}
	for len(f.recorder.Events) > 0 {
		if e := <-f.recorder.Events; strings.Contains(e, string(EventBudgetConflict)) {
			t.Errorf("the conflict was reported again: %s", e)
		}
	}
}

// A budget the operator may not write (RBAC of an older install, an admission webhook) does
// not stop the pass: members are still repaired.
func TestSyncWithoutBudgetRights(t *testing.T) {
	c := newCluster(3)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	f.kube.PrependReactor("patch", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "demo", errors.New("RBAC"))
	})
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "pods")); n != 1 {
		t.Errorf("%d pods created, want the seed", n)
	}
}

func TestSyncPausedChangesNothing(t *testing.T) {
	c := newCluster(3)
	c.Spec.Paused = true
	f := newFixture(t, c)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "pods")) + len(f.applied("services")); n != 0 {
		t.Errorf("paused cluster: %d objects created", n)
	}
	updates := f.actions("update", "etcdclusters")
	if len(updates) != 1 {
		t.Fatalf("paused cluster: %d status writes, want 1", len(updates))
	}
	if p := updates[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster).Status.Phase; p != api.PhasePaused {
		t.Errorf("phase = %s, want Paused", p)
	}
}

func TestSyncGoneCluster(t *testing.T) {
	f := newFixture(t)
	if _, err := f.r.Sync(context.Background(), "ns", "missing"); !errors.Is(err, ErrGone) {
		t.Fatalf("Sync of a missing cluster = %v, want ErrGone", err)
	}
}

func TestSyncNeverRebootstrapsALostCluster(t *testing.T) {
	c := newCluster(3)
	c.Status.Size = 3
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "pods")); n != 0 {
		t.Fatalf("created %d pods for a cluster whose members are all lost", n)
	}
	st := f.actions("update", "etcdclusters")[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster).Status
	if !meta.IsStatusConditionTrue(st.Conditions, string(api.ConditionDegraded)) {
		t.Errorf("Degraded not set: %+v", st.Conditions)
	}
}

func TestMemberVersion(t *testing.T) {
	for _, tc := range []struct {
		spec, running, want string
		degraded            bool
	}{
		{spec: "v3.6.17", running: "", want: "3.6.17"},
		{spec: "v3.6.16", running: "3.6.16", want: "3.6.16"},
		{spec: "3.6.17", running: "3.6.16", want: "3.6.17"},
		{spec: "3.6.15", running: "3.6.16", want: "3.6.15"},
		{spec: "3.7.3", running: "3.6.16", want: "3.7.3"},
		{spec: "3.6.16", running: "3.5.35", want: "3.6.16"},
		// Set back before the upgrade finished: a member still runs 3.6.
		{spec: "3.6.16", running: "3.6.16", want: "3.6.16"},
		{spec: "3.7.3", running: "3.5.35", want: "3.5.35", degraded: true},
		{spec: "3.6.16", running: "3.5.21", want: "3.5.21", degraded: true},
		{spec: "3.6.16", running: "3.7.3", want: "3.7.3", degraded: true},
		{spec: "4.0.0", running: "3.7.3", want: "3.7.3", degraded: true},
	} {
		c := newCluster(3)
		c.Spec.Version = tc.spec
		c.Status.CurrentVersion = tc.running
		if got := (&observation{cluster: c}).memberVersion(); got != tc.want {
			t.Errorf("spec %s running %q: member version %s, want %s", tc.spec, tc.running, got, tc.want)
		}
		st := status.Compute(c, plan.State{Name: c.Name, Size: 3}, plan.Decision{})
		deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded))
		isDeg := deg != nil && deg.Status == metav1.ConditionTrue && deg.Reason == string(api.ReasonVersionChangeUnsupported)
		if isDeg != tc.degraded {
			t.Errorf("spec %s running %q: Degraded = %+v, want VersionChangeUnsupported %v", tc.spec, tc.running, deg, tc.degraded)
		}
	}
}

// A paused cluster is left untouched, the record of its etcd cluster ID included (it is
// written on the first pass after the pause is lifted), and its status still tells the
// truth: members that do not answer are reported, not "nothing is wrong".
func TestSyncPausedIsUntouchedAndTruthful(t *testing.T) {
	t.Run("members answer: the cluster ID is not recorded while paused", func(t *testing.T) {
		f, etcd, _ := threeMembers(t, func(c *api.EtcdCluster) *corev1.Pod { c.Spec.Paused = true; return ourPod(c) })
		withClusterIDs(etcd, 0xc1, "")
		if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		if n := len(f.actions("patch", "etcdclusters")); n != 0 {
			t.Errorf("paused cluster: %d patches of the cluster, want none", n)
		}
	})
	t.Run("no member answers: Degraded says so", func(t *testing.T) {
		f, etcd, _ := threeMembers(t, func(c *api.EtcdCluster) *corev1.Pod { c.Spec.Paused = true; return ourPod(c) })
		etcd.status = map[string]etcdutil.Status{}
		if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		if deg := degradedOf(t, f); deg == nil || deg.Status != metav1.ConditionTrue || deg.Reason == string(api.ReasonAsExpected) {
			t.Errorf("paused cluster whose members do not answer: Degraded = %+v, want True with why", deg)
		}
	})
}
