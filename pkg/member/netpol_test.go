package member

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// ports lists the ports of a rule.
func ports(r networkingv1.NetworkPolicyIngressRule) []int32 {
	var out []int32
	for _, p := range r.Ports {
		out = append(out, p.Port.IntVal)
	}
	return out
}

func TestNetworkPolicy(t *testing.T) {
	c := testCluster()
	if np := NetworkPolicy(c, OperatorPeer("ops")); np != nil {
		t.Fatalf("a policy without spec.networkPolicy: %+v", np)
	}
	c.Spec.TLS = &api.TLSSpec{Peer: &api.TLSSource{}}
	app := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}
	c.Spec.NetworkPolicy = &api.NetworkPolicySpec{Clients: []networkingv1.NetworkPolicyPeer{app}}
	np := NetworkPolicy(c, OperatorPeer("ops"))
	if np.Name != "demo" || np.Namespace != "prod" || !metav1.IsControlledBy(np, c) || !ManagedSelector().Matches(labels.Set(np.Labels)) {
		t.Errorf("policy %s/%s, owners %v, labels %v: want demo in prod, owned, managed", np.Namespace, np.Name, np.OwnerReferences, np.Labels)
	}
	if got := np.Spec.PodSelector.MatchLabels; got[LabelCluster] != "demo" || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("selects %v for %v, want the members of demo, Ingress only", got, np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 3 {
		t.Fatalf("%d ingress rules, want members on both ports, clients on the client port and the operator on the peer port", len(np.Spec.Ingress))
	}
	// The peer port and the move port (where a member's TLS listener is while the peers move
	// onto TLS).
	if op := np.Spec.Ingress[2]; len(ports(op)) != 2 || ports(op)[0] != PeerPort || ports(op)[1] != MovePort || len(op.From) != 1 ||
		op.From[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "ops" {
		t.Errorf("the operator's rule %+v: want the operator (in ops) on %d and %d", op, PeerPort, MovePort)
	}
	members, clients := np.Spec.Ingress[0], np.Spec.Ingress[1]
	if p := ports(members); len(p) != 3 || p[0] != ClientPort || p[1] != PeerPort || p[2] != MovePort || len(members.From) != 1 ||
		members.From[0].PodSelector.MatchLabels[LabelCluster] != "demo" || members.From[0].NamespaceSelector != nil {
		t.Errorf("members' rule %+v: want the members of demo, in its namespace, on %d, %d and %d", members, ClientPort, PeerPort, MovePort)
	}
	if p := ports(clients); len(p) != 1 || p[0] != ClientPort || len(clients.From) != 3 ||
		clients.From[0].PodSelector.MatchLabels[LabelBackupCluster] != "demo" || clients.From[0].NamespaceSelector != nil ||
		clients.From[1].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "ops" ||
		clients.From[2].PodSelector.MatchLabels["app"] != "api" {
		t.Errorf("clients' rule %+v: want demo's backup pods, the operator (in ops) and app=api, on %d only", clients, ClientPort)
	}

	// Plaintext peers: no CA rotates, so the operator has no rule on the peer port.
	c.Spec.TLS = &api.TLSSpec{}
	if np := NetworkPolicy(c, OperatorPeer("ops")); len(np.Spec.Ingress) != 2 {
		t.Errorf("plaintext peers: %d ingress rules %+v, want the members' and the clients' only", len(np.Spec.Ingress), np.Spec.Ingress)
	}

	// No clients and no operator peer: the client port still lets in the backup pods alone,
	// never anyone (a rule without peers would).
	c.Spec.NetworkPolicy.Clients = nil
	np = NetworkPolicy(c, OperatorPeer(""))
	if len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[1].From) != 1 ||
		np.Spec.Ingress[1].From[0].PodSelector.MatchLabels[LabelBackupCluster] != "demo" {
		t.Errorf("ingress %+v: want the members' rule and the backup pods' on the client port", np.Spec.Ingress)
	}
}
