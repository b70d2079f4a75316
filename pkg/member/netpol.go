package member

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// NetworkPolicyName is the name of the NetworkPolicy of the cluster's member pods.
func NetworkPolicyName(cluster string) string { return cluster }

// OperatorPeer is the operator's own pods, labelled app.kubernetes.io/name=etcd-operator
// (deploy/) in namespace, as a NetworkPolicy peer: the operator dials every member's client
// port. nil when the namespace is unknown (the operator runs outside the cluster, where it
// is no pod a policy could name).
func OperatorPeer(namespace string) *networkingv1.NetworkPolicyPeer {
	if namespace == "" {
		return nil
	}
	return &networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "etcd-operator"}},
	}
}

// NetworkPolicy is the policy spec.networkPolicy asks for, nil when it asks for none. The
// members reach each other on both ports (raft on the peer port; member-init and the members'
// own clients on the client port); the operator, the cluster's backup pods and the spec's
// clients reach the client port, and the operator the peer port too. The rule of the client port is left out when it names no one: a rule without peers
// would let everyone in. The kubelet's probes come from the node, which network plugins let
// through.
func NetworkPolicy(c *api.EtcdCluster, operator *networkingv1.NetworkPolicyPeer) *networkingv1.NetworkPolicy {
	if c.Spec.NetworkPolicy == nil {
		return nil
	}
	tcp := corev1.ProtocolTCP
	port := func(p int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: ptrIntOrString(p)}
	}
	members := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(c.Name)}}
	ingress := []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{members},
		Ports: []networkingv1.NetworkPolicyPort{port(ClientPort), port(PeerPort), port(MovePort)},
	}}
	// The cluster's backup pods (package backup) stream a snapshot from the client port.
	clients := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{LabelManagedBy: ManagedByValue, LabelBackupCluster: c.Name}}}}
	if operator != nil {
		clients = append(clients, *operator.DeepCopy())
	}
	for _, p := range c.Spec.NetworkPolicy.Clients {
		clients = append(clients, *p.DeepCopy())
	}
	if len(clients) > 0 {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{
			From: clients, Ports: []networkingv1.NetworkPolicyPort{port(ClientPort)},
		})
	}
	// The operator asks the members' peer ports what they trust and serve while a CA rotates
	// (pkg/cluster/tls_probe.go); the port still demands a certificate of the peer CA. A
	// plaintext peer port has no CA to rotate, and stays closed to anyone but the members.
	// While the peers move onto TLS, the TLS listener may be the move port's.
	if operator != nil && PeerTLS(c) {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{*operator.DeepCopy()}, Ports: []networkingv1.NetworkPolicyPort{port(PeerPort), port(MovePort)},
		})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: ownedMeta(c, NetworkPolicyName(c.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(c.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

func ptrIntOrString(p int32) *intstr.IntOrString {
	v := intstr.FromInt32(p)
	return &v
}
