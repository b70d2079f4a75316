package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// threeMembers is a running cluster of three whose member 0 runs in pod (built by the test);
// members 1 and 2 run in the cluster's own pods; member 2 leads.
func threeMembers(t *testing.T, pod0 func(c *api.EtcdCluster) *corev1.Pod) (*fixture, *fakeEtcd, *api.EtcdCluster) {
	c := newCluster(3)
	c.Status.Size = 3
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: member.PeerServiceName(c.Name)}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	etcd := &fakeEtcd{t: t, status: map[string]etcdutil.Status{}}
	objs := []any{}
	for ord, ip := range []string{"10.244.0.9", "10.244.0.10", "10.244.0.11"} {
		id := uint64(ord + 1)
		c.Status.Members = append(c.Status.Members, api.MemberStatus{Name: member.Name(c.Name, ord), ID: hexID(id), Ready: true})
		etcd.members = append(etcd.members, etcdutil.Member{ID: id, Name: member.Name(c.Name, ord),
			PeerURLs: []string{member.PeerURL(c, ord)}})
		etcd.status[member.PodClientURL(ip, member.ClientTLS(c))] = etcdutil.Status{ID: id, Leader: 3, Version: "3.6.16"}
		p := memberPod(c, ord, ip, corev1.PodRunning, time.Now().Add(-time.Hour), slice)
		if ord == 0 {
			p = pod0(c)
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}
		}
		objs = append(objs, p)
	}
	f := newFixture(t, c, objs[0].(*corev1.Pod), objs[1].(*corev1.Pod), objs[2].(*corev1.Pod), slice,
		member.PeerService(c), member.ClientService(c))
	f.with(func(d *Deps) { d.Etcd = etcd })
	return f, etcd, c
}

// orphanOf is member 0's pod as an earlier cluster of the same name made it (another UID),
// orphaned: labels kept, owner reference gone (kubectl delete --cascade=orphan, applied again).
func orphanOf(c *api.EtcdCluster) *corev1.Pod {
	earlier := c.DeepCopy()
	earlier.UID = "uid-of-an-earlier-cluster"
	p := member.Pod(earlier, member.Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "x")
	p.UID, p.OwnerReferences = "pod-uid-0", nil
	return p
}

func degradedOf(t *testing.T, f *fixture) *metav1.Condition {
	t.Helper()
	got, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(got.Status.Conditions, string(api.ConditionDegraded))
}

func countEvents(f *fixture, reason EventReason) int {
	n := 0
	for len(f.recorder.Events) > 0 {
		if strings.Contains(<-f.recorder.Events, string(reason)) {
			n++
		}
	}
	return n
}

// A healthy member whose pod is orphaned (its owner reference gone, another cluster's token)
// is neither removed nor replaced: the conflict is reported, once, and the pod is untouched.
func TestSyncOrphanedMemberPodIsLeftAlone(t *testing.T) {
	f, _, _ := threeMembers(t, orphanOf)
	for range 2 {
		if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		// A pass that went on would update the cache with what it did; the cache stays
		// as it was, so the second pass sees the same world.
	}
	for _, verb := range []string{"create", "delete", "patch", "update"} {
		for _, a := range f.actions(verb, "pods") {
			if n, ok := a.(interface{ GetName() string }); !ok || n.GetName() == "demo-0" || verb == "create" || verb == "delete" {
				t.Errorf("pod %s call %v, want none on demo-0 and no pod made or deleted", verb, a)
			}
		}
	}
	deg := degradedOf(t, f)
	if deg == nil || deg.Status != metav1.ConditionTrue || deg.Reason != string(api.ReasonForeignObject) ||
		!strings.Contains(deg.Message, "Pod demo-0") {
		t.Errorf("Degraded = %+v, want True plan.ForeignObject naming Pod demo-0", deg)
	}
	if n := countEvents(f, EventForeignObject); n != 1 {
		t.Errorf("%d plan.ForeignObject Events over two passes, want 1", n)
	}
}

// A member pod without a controller that carries the cluster's labels and token (its owner
// reference removed by hand) is the cluster's: it is adopted and its member kept.
func TestSyncAdoptsItsOwnOrphanedPod(t *testing.T) {
	f, _, c := threeMembers(t, func(c *api.EtcdCluster) *corev1.Pod {
		p := member.Pod(c, member.Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, testInitImage)
		p.UID, p.OwnerReferences = "pod-uid-0", nil
		return p
	})
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "demo-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(pod, c) {
		t.Errorf("pod demo-0 not adopted: owners %v", pod.OwnerReferences)
	}
	if deg := degradedOf(t, f); deg == nil || deg.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v, want False", deg)
	}
	if n := len(f.actions("delete", "pods")) + len(f.actions("create", "pods")); n != 0 {
		t.Errorf("%d pod creates or deletes, want none", n)
	}
}

// A Service of the client Service's name owned by another cluster (one named demo-client,
// whose peer Service it is) is neither updated nor taken as the cluster's; status is still
// written and names it.
func TestSyncForeignServiceInCache(t *testing.T) {
	c := newCluster(1)
	other := newCluster(1)
	other.Name, other.UID = "demo-client", "uid-other"
	theirs := member.PeerService(other)
	f := newFixture(t, c, theirs)
	for range 2 {
		if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	if n := len(f.actions("delete", "services")) + len(f.actions("update", "services")) +
		len(slices.DeleteFunc(f.applied("services"), func(name string) bool { return name != theirs.Name })); n != 0 {
		t.Errorf("%d service updates, want none", n)
	}
	deg := degradedOf(t, f)
	if deg == nil || deg.Reason != string(api.ReasonForeignObject) || !strings.Contains(deg.Message, "Service demo-client (controlled by EtcdCluster demo-client)") {
		t.Errorf("Degraded = %+v, want plan.ForeignObject naming Service demo-client", deg)
	}
	if n := countEvents(f, EventForeignObject); n != 1 {
		t.Errorf("%d plan.ForeignObject Events over two passes, want 1", n)
	}
	if n := len(f.actions("create", "pods")); n == 0 {
		t.Errorf("no pod created, want the seed: a foreign Service does not stop the cluster")
	}
}

// A Service of the client Service's name made by hand, without the operator's labels, is not
// in the cache; the create that finds it is not taken for the operator's own.
func TestSyncForeignServiceOutsideCache(t *testing.T) {
	c := newCluster(1)
	f := newFixture(t, c)
	byHand := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "demo-client", Namespace: "ns", UID: "by-hand"}}
	if err := f.kube.Tracker().Add(byHand); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	deg := degradedOf(t, f)
	if deg == nil || deg.Reason != string(api.ReasonForeignObject) || !strings.Contains(deg.Message, "Service demo-client (no controller, no labels)") {
		t.Errorf("Degraded = %+v, want plan.ForeignObject naming Service demo-client", deg)
	}
}

// A member pod or claim made by hand, outside the cache, stops the pass before anything is
// done to the member (the API is asked for what the cache does not show).
func TestSyncForeignPodOutsideCache(t *testing.T) {
	c := newCluster(1)
	f := newFixture(t, c)
	byHand := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-0", Namespace: "ns", UID: "by-hand"}}
	if err := f.kube.Tracker().Add(byHand); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "pods")); n != 0 {
		t.Errorf("%d pods created, want none", n)
	}
	if deg := degradedOf(t, f); deg == nil || deg.Reason != string(api.ReasonForeignObject) || !strings.Contains(deg.Message, "Pod demo-0") {
		t.Errorf("Degraded = %+v, want plan.ForeignObject naming Pod demo-0", deg)
	}
}

// CreatePod never takes someone else's pod as created, never mounts someone else's claim,
// and keeps using a claim the cluster retained (no owner, its labels).
func TestCreatePodMeetsForeignObjects(t *testing.T) {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	tmpl := member.Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}
	ctx := context.Background()

	podByHand := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-1", Namespace: "ns"}}
	m, _ := newControl(&answeringEtcd{}, kubefake.NewClientset(podByHand))
	if _, err := m.CreatePod(ctx, c, tmpl, "x"); !errors.Is(err, ErrForeignObject) {
		t.Errorf("create over a pod made by hand = %v, want ErrForeignObject", err)
	}

	other := c.DeepCopy()
	other.UID = "uid-other"
	theirClaim := member.Claim(other, 1)
	theirClaim.OwnerReferences = []metav1.OwnerReference{member.OwnerReference(other)}
	kube := kubefake.NewClientset(theirClaim)
	m, _ = newControl(&answeringEtcd{}, kube)
	if _, err := m.CreatePod(ctx, c, tmpl, "x"); !errors.Is(err, ErrForeignObject) {
		t.Errorf("create over another cluster's claim = %v, want ErrForeignObject", err)
	}
	if _, err := kube.CoreV1().Pods("ns").Get(ctx, "demo-1", metav1.GetOptions{}); err == nil {
		t.Error("a pod was created on another cluster's claim")
	}

	retained := member.Claim(c, 1)
	retained.OwnerReferences = nil
	retained.Annotations = map[string]string{member.AnnotationMemberID: "2"}
	kube = kubefake.NewClientset(retained)
	m, _ = newControl(&answeringEtcd{}, kube)
	if res, err := m.CreatePod(ctx, c, tmpl, "x"); err != nil || !res.Changed {
		t.Errorf("create on a retained claim = %+v, %v; want the pod created", res, err)
	}
}

// The claim of a member whose pod is foreign is left as it is (whenDeleted Delete). Another
// cluster's claim of a member's name, seen in the cache, is reported.
func TestSyncClaimsOfForeignMembers(t *testing.T) {
	c := newCluster(2)
	c.Spec.Storage = member.DefaultStorage()
	c.Spec.Storage.RetentionPolicy = &api.RetentionPolicy{WhenDeleted: api.RetentionDelete}
	c.Finalizers = []string{api.FinalizerClaims}
	orphan := orphanOf(c)
	kept := member.Claim(c, 0)
	kept.UID, kept.OwnerReferences = "claim-uid-0", nil
	other := c.DeepCopy()
	other.UID = "uid-other"
	theirs := member.Claim(c, 1)
	theirs.UID, theirs.OwnerReferences = "claim-uid-1", []metav1.OwnerReference{member.OwnerReference(other)}
	f := newFixture(t, c, orphan, kept, theirs)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	for _, verb := range []string{"patch", "update", "delete"} {
		if n := len(f.actions(verb, "persistentvolumeclaims")); n != 0 {
			t.Errorf("%d claim %s calls, want none", n, verb)
		}
	}
	if deg := degradedOf(t, f); deg == nil || !strings.Contains(deg.Message, "PersistentVolumeClaim data-demo-1 (controlled by EtcdCluster demo)") ||
		!strings.Contains(deg.Message, "Pod demo-0") {
		t.Errorf("Degraded = %+v, want it to name pod demo-0 and claim data-demo-1", deg)
	}
}

// A member's pod waits (unschedulable) while its claim is missing from the cache: the claim
// is asked for by name before anything concludes the member's data is gone. Its labels
// stripped, it is still the cluster's when the cluster controls it, and foreign otherwise
// (the planner then changes nothing).
func TestObserveAsksForClaimsMissingFromTheCache(t *testing.T) {
	for _, tc := range []struct {
		name      string
		owned     bool
		marked    bool
		wantClaim bool
	}{
		{"owned by the cluster, labels stripped: observed as the member's claim", true, false, true},
		{"no owner (Retain), marked with its member, labels stripped: still the member's claim", false, true, true},
		{"no owner, no mark, labels stripped: observed as foreign, never as gone", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(3)
			c.Spec.Storage = member.DefaultStorage()
			c.Status.Size = 3
			c.Status.Members = []api.MemberStatus{{Name: "demo-0"}, {Name: "demo-1"}, {Name: "demo-2"}}
			pod := memberPod(c, 1, "", corev1.PodPending, time.Now().Add(-time.Hour), &discoveryv1.EndpointSlice{})
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 node(s) were unschedulable."}}
			stripped := member.Claim(c, 1)
			stripped.UID, stripped.Labels, stripped.OwnerReferences = "claim-uid-1", nil, nil
			if tc.owned {
				stripped.OwnerReferences = []metav1.OwnerReference{member.OwnerReference(c)}
			}
			if tc.marked {
				stripped.Annotations = map[string]string{member.AnnotationMemberID: member.FormatID(101)}
			}
			f := newFixture(t, c, pod)
			if err := f.kube.Tracker().Add(stripped); err != nil {
				t.Fatal(err)
			}
			o, err := f.r.observe(context.Background(), c)
			if err != nil {
				t.Fatalf("observe: %v", err)
			}
			if _, got := o.claims[1]; got != tc.wantClaim {
				t.Errorf("claim data-demo-1 observed as the member's: %v, want %v", got, tc.wantClaim)
			}
			if foreign := o.hasForeign(plan.ForeignClaim, 1); foreign == tc.wantClaim {
				t.Errorf("claim data-demo-1 observed as foreign: %v, want %v", foreign, !tc.wantClaim)
			}
		})
	}
}
