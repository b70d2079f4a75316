package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// TestEveryWriteGoesThroughTheActor: with a recording actor in place of the real one, a pass
// makes no write of its own: the clientsets see only reads, and the status update. What it
// would have written is what the actor was asked.
func TestEveryWriteGoesThroughTheActor(t *testing.T) {
	withPolicy := withNetworkPolicy(newCluster(3))
	unset := newCluster(3)
	policy := member.NetworkPolicy(withPolicy, nil)
	noStorage := newCluster(3)
	noStorage.Spec.Storage = nil
	for _, tc := range []struct {
		name         string
		objs         []runtime.Object
		installation string
		want         []string
	}{
		{name: "new cluster", objs: []runtime.Object{withPolicy}, installation: "ns/etcd-operator",
			want: []string{"CreateLease demo-operator", "ApplyService demo create=true", "ApplyService demo-client create=true",
				"ApplyBudget demo create=true", "ApplyNetworkPolicy demo create=true", "ApplyService demo-0 create=true",
				"CreatePod 0 new [0] " + api.DefaultVersion}},
		{name: "storage left out", objs: []runtime.Object{noStorage},
			want: []string{"PatchClusterStorage demo"}},
		{name: "policy no longer asked for", objs: []runtime.Object{unset, policy, member.DisruptionBudget(newCluster(5))},
			want: []string{"ApplyBudget demo create=false", "DeleteNetworkPolicy demo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.objs...)
			f.with(func(d *Deps) { d.Installation = tc.installation })
			fa := &fakeActor{result: Result{Changed: true}}
			f.r.control = fa
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			for _, a := range append(f.kube.Actions(), f.client.Actions()...) {
				switch {
				case a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch":
				case a.GetVerb() == "update" && a.GetSubresource() == "status":
				default:
					t.Errorf("the pass wrote around the actor: %s %s %s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			for _, w := range tc.want {
				if !slices.Contains(fa.calls, w) {
					t.Errorf("actor calls %q, want %q among them", fa.calls, w)
				}
			}
		})
	}
}

// The patches the actor sends: typed, with the UID precondition, and the resourceVersion
// where the change was computed from the object as read.
func TestPatchBodies(t *testing.T) {
	for _, tc := range []struct {
		patch *objectPatch
		want  string
	}{
		{patchOf("u1").annotate("k", "v"), `{"metadata":{"uid":"u1","annotations":{"k":"v"}}}`},
		{patchOf("u1").unannotate("k"), `{"metadata":{"uid":"u1","annotations":{"k":null}}}`},
		{patchOf("u1").owners(nil), `{"metadata":{"uid":"u1","ownerReferences":[]}}`},
		{patchOf("u1").asRead("7").finalizers(nil), `{"metadata":{"uid":"u1","resourceVersion":"7","finalizers":[]}}`},
		{patchOf("u1").asRead("7").finalizers([]string{"a", api.FinalizerClaims}),
			`{"metadata":{"uid":"u1","resourceVersion":"7","finalizers":["a","etcd.operator.dev/claims"]}}`},
		{patchOf("u1").asRead("7").spec(podSpecPatch{Containers: []containerImage{{Name: "etcd", Image: "img"}}}),
			`{"metadata":{"uid":"u1","resourceVersion":"7"},"spec":{"containers":[{"name":"etcd","image":"img"}]}}`},
		{patchOf("u1").spec(budgetSpecPatch{MinAvailable: ptrTo(intstr.FromInt32(2))}),
			`{"metadata":{"uid":"u1"},"spec":{"minAvailable":2,"maxUnavailable":null}}`},
		{patchOf("u1").spec(clusterSpecPatch{Storage: member.LegacyStorage()}),
			`{"metadata":{"uid":"u1"},"spec":{"storage":{"emptyDir":{}}}}`},
	} {
		got, err := tc.patch.encode()
		if err != nil || !jsonEqual(t, string(got), tc.want) {
			t.Errorf("patch %s (%v), want %s", got, err, tc.want)
		}
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// What is applied of a Service is what the operator decides, nothing the API server or
// another controller sets: a Service that carries those fields (its clusterIP, its IP
// families, a port someone added) is current, and an idle pass applies nothing to it.
func TestServiceApplyOwnsOnlyItsFields(t *testing.T) {
	c := newCluster(3)
	for _, want := range []*corev1.Service{member.PeerService(c), member.ClientService(c), member.MemberService(c, 0)} {
		cfg := serviceApply(want)
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		headless := want.Spec.ClusterIP == corev1.ClusterIPNone
		if strings.Contains(body, `"clusterIP"`) != headless || strings.Contains(body, "ipFamil") {
			t.Errorf("%s applies %s: clusterIP only for a headless Service, no IP families", want.Name, body)
		}
		if *cfg.Name != want.Name || len(cfg.OwnerReferences) != 1 || *cfg.OwnerReferences[0].UID != c.UID {
			t.Errorf("%s applies %s: want its name and the cluster as controller", want.Name, body)
		}
		have := want.DeepCopy()
		have.Spec.ClusterIP, have.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
		if headless {
			have.Spec.ClusterIP, have.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
		}
		have.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		have.Spec.Ports = append(have.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
		if !serviceCurrent(have, want) {
			t.Errorf("%s with fields others set is not current", want.Name)
		}
		have.Spec.Ports[0].Port++
		if serviceCurrent(have, want) {
			t.Errorf("%s with a port changed is current", want.Name)
		}
	}
}

// A Service someone changed is put back by a server-side apply with the operator's field
// manager; the fields it does not own are left as they are.
func TestSyncRestoresServiceByApply(t *testing.T) {
	c := newCluster(3)
	changed := member.ClientService(c)
	changed.Spec.Selector = map[string]string{"app": "other"}
	changed.Spec.ClusterIP = "10.96.0.10"
	f := newFixture(t, c, member.PeerService(c), changed)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if !slices.Contains(f.applied("services"), changed.Name) {
		t.Fatalf("applied %v, want %s put back", f.applied("services"), changed.Name)
	}
	for _, a := range f.actions("patch", "services") {
		p := a.(k8stesting.PatchAction)
		if p.GetName() == changed.Name && (p.GetPatchType() != types.ApplyPatchType || strings.Contains(string(p.GetPatch()), "clusterIP")) {
			t.Errorf("patch of %s: %s %s, want an apply without clusterIP", changed.Name, p.GetPatchType(), p.GetPatch())
		}
	}
	got, err := f.kube.CoreV1().Services("ns").Get(context.Background(), changed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !serviceCurrent(got, member.ClientService(c)) || got.Spec.ClusterIP != "10.96.0.10" {
		t.Errorf("service after the pass: %+v, want the selector back and clusterIP kept", got.Spec)
	}
}

// A budget someone changed to maxUnavailable is put back to minAvailable: the field the
// operator cannot leave beside its own, and cannot drop by an apply, is dropped by a patch.
func TestSyncRestoresBudgetFromMaxUnavailable(t *testing.T) {
	c := newCluster(3)
	changed := member.DisruptionBudget(c)
	one := intstr.FromInt32(1)
	changed.Spec.MinAvailable, changed.Spec.MaxUnavailable = nil, &one
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c), changed)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got, err := f.kube.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), changed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.MaxUnavailable != nil || got.Spec.MinAvailable == nil || got.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("budget after the pass: %+v, want minAvailable 2 and no maxUnavailable", got.Spec)
	}
	// Put back, it is current: the next pass writes nothing.
	_ = f.kinf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Update(got)
	f.kube.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.applied("poddisruptionbudgets")); n != 0 {
		t.Errorf("%d applies of a budget that is current", n)
	}
}

// A port someone changed under the name of one of the operator's is put back, not applied
// beside it; a port someone added under another name stays.
func TestSyncRestoresChangedPort(t *testing.T) {
	c := newCluster(3)
	changed := member.ClientService(c)
	changed.Spec.Ports[0].Port, changed.Spec.Ports[0].TargetPort = 2380, intstr.FromInt32(2380)
	f := newFixture(t, c, member.PeerService(c), changed)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got, err := f.kube.CoreV1().Services("ns").Get(context.Background(), changed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := member.ClientService(c); len(got.Spec.Ports) != 1 || !serviceCurrent(got, want) {
		t.Errorf("ports after the pass: %+v, want %+v", got.Spec.Ports, want.Spec.Ports)
	}
	if portsClash(got, member.ClientService(c)) {
		t.Error("the ports still clash")
	}
	added := member.ClientService(c)
	added.Spec.Ports = append(added.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
	if portsClash(added, member.ClientService(c)) || !serviceCurrent(added, member.ClientService(c)) {
		t.Error("a port added under another name is taken for a clash")
	}
}
