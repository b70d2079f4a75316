package cluster

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

func withNetworkPolicy(c *api.EtcdCluster, clients ...networkingv1.NetworkPolicyPeer) *api.EtcdCluster {
	c = c.DeepCopy()
	c.Spec.NetworkPolicy = &api.NetworkPolicySpec{Clients: clients}
	return c
}

// syncOnce runs one pass over a fixture whose actions are cleared first.
func syncOnce(t *testing.T, f *fixture) {
	t.Helper()
	f.kube.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// The cluster's NetworkPolicy is created when the spec asks for one, put back when changed,
// and deleted when the spec no longer asks.
func TestSyncKeepsNetworkPolicy(t *testing.T) {
	ctx := context.Background()
	app := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}
	sync := func(f *fixture) { t.Helper(); syncOnce(t, f) }

	// Asked for: created, with the operator and the clients let in.
	c := withNetworkPolicy(newCluster(3), app)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	sync(f)
	creates := f.applied("networkpolicies")
	if len(creates) != 1 {
		t.Fatalf("%d network policies created, want 1", len(creates))
	}
	got, err := f.kube.NetworkingV1().NetworkPolicies("ns").Get(ctx, creates[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := member.NetworkPolicy(c, member.OperatorPeer("etcd-operator-system"))
	if got.Name != "demo" || len(got.Spec.Ingress) != len(want.Spec.Ingress) ||
		len(got.Spec.Ingress[1].From) != 3 || want.Spec.Ingress[1].From[1].NamespaceSelector == nil {
		t.Errorf("created %+v, want %+v", got.Spec, want.Spec)
	}

	// Changed by someone (the clients' and the operator's rules dropped): put back. Unchanged: left alone.
	changed := got.DeepCopy()
	changed.Spec.Ingress = changed.Spec.Ingress[:1]
	f = newFixture(t, c, member.PeerService(c), member.ClientService(c), changed)
	sync(f)
	if updates := f.applied("networkpolicies"); len(updates) != 1 {
		t.Errorf("updates %v, want the policy put back", updates)
	} else if back, err := f.kube.NetworkingV1().NetworkPolicies("ns").Get(ctx, "demo", metav1.GetOptions{}); err != nil || len(back.Spec.Ingress) != len(want.Spec.Ingress) {
		t.Errorf("policy after the update: %+v, %v; want the clients' and the operator's rules back", back, err)
	}
	f = newFixture(t, c, member.PeerService(c), member.ClientService(c), got)
	sync(f)
	if n := len(f.actions("update", "networkpolicies")) + len(f.applied("networkpolicies")); n != 0 {
		t.Errorf("%d writes to a policy that matches the spec", n)
	}

	// No longer asked for: deleted. Never asked for: nothing.
	off := newCluster(3)
	f = newFixture(t, off, member.PeerService(off), member.ClientService(off), got)
	sync(f)
	if n := len(f.actions("delete", "networkpolicies")); n != 1 {
		t.Errorf("%d network policies deleted once spec.networkPolicy is unset, want 1", n)
	}
	f = newFixture(t, off, member.PeerService(off), member.ClientService(off))
	sync(f)
	for _, verb := range []string{"create", "update", "patch", "delete"} {
		if n := len(f.actions(verb, "networkpolicies")); n != 0 {
			t.Errorf("%d network policy %s without spec.networkPolicy", n, verb)
		}
	}
}

// Someone else's policy of the cluster's policy's name (not in the cache: no operator
// labels) is left alone, reported once, and the members are still made.
func TestSyncLeavesForeignNetworkPolicy(t *testing.T) {
	ctx := context.Background()
	sync := func(f *fixture) { t.Helper(); syncOnce(t, f) }
	c := withNetworkPolicy(newCluster(3))
	foreign := member.NetworkPolicy(c, nil)
	foreign.OwnerReferences, foreign.Labels = nil, nil
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	if _, err := f.kube.NetworkingV1().NetworkPolicies("ns").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sync(f)
	if n := len(f.actions("create", "pods")); n != 1 {
		t.Errorf("%d pods created; a foreign policy must not hold the cluster back", n)
	}
	var warned int
	for len(f.recorder.Events) > 0 {
		if e := <-f.recorder.Events; strings.Contains(e, string(EventNetworkPolicyConflict)) {
			warned++
		}
	}
	sync(f)
	for len(f.recorder.Events) > 0 {
		if e := <-f.recorder.Events; strings.Contains(e, string(EventNetworkPolicyConflict)) {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("the foreign policy was reported %d times over two passes, want once", warned)
	}
	if p, err := f.kube.NetworkingV1().NetworkPolicies("ns").Get(ctx, "demo", metav1.GetOptions{}); err != nil || len(p.OwnerReferences) != 0 {
		t.Errorf("the foreign policy was changed: %+v, %v", p, err)
	}
}
