package member

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// PeerService is the headless Service that gives every member the stable DNS name
// <member>.<cluster>.<namespace>.svc. It publishes members before they are ready: a member
// must be resolvable by its peers while it is still joining.
func PeerService(c *api.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: ownedMeta(c, PeerServiceName(c.Name)),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 selectorLabels(c.Name),
			Ports: []corev1.ServicePort{
				servicePort("client", ClientPort),
				servicePort("peer", PeerPort),
			},
		},
	}
}

// MemberService is the member's own Service (MemberServiceName), whose name is the member's
// Host: a virtual IP that routes to the member's pod, whichever pod that is, ready or not (a
// member must be reachable by its peers while it is still joining). Peers dial a member
// through it, so a pod made again is reached as soon as it has an address, with no DNS
// answer to wait out.
func MemberService(c *api.EtcdCluster, ordinal int) *corev1.Service {
	meta := ownedMeta(c, MemberServiceName(c.Name, ordinal))
	meta.Labels[LabelMember] = Name(c.Name, ordinal)
	selector := selectorLabels(c.Name)
	selector[LabelMember] = Name(c.Name, ordinal)
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			PublishNotReadyAddresses: true,
			Selector:                 selector,
			// The move port too: while the peers move on or off TLS (package peermove),
			// members dial each other there, through this Service.
			Ports: []corev1.ServicePort{
				servicePort("client", ClientPort),
				servicePort("peer", PeerPort),
				servicePort(MovePortName, MovePort),
			},
		},
	}
}

// Forwards reports whether Service s forwards port to its pods.
func Forwards(s *corev1.Service, port int32) bool {
	for _, p := range s.Spec.Ports {
		if p.Port == port && p.TargetPort.IntValue() == int(port) {
			return true
		}
	}
	return false
}

// MemberServiceOrdinal is the ordinal of one of the cluster's member Services; ok is false
// for any other Service.
func MemberServiceOrdinal(cluster string, s *corev1.Service) (ordinal int, ok bool) {
	if s.Labels[LabelMember] == "" || s.Labels[LabelMember] != s.Name {
		return 0, false
	}
	return Ordinal(cluster, s.Name)
}

// ClientService is the Service clients use; it routes only to ready members.
func ClientService(c *api.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: ownedMeta(c, ClientServiceName(c.Name)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorLabels(c.Name),
			Ports:    []corev1.ServicePort{servicePort("client", ClientPort)},
		},
	}
}

// ownedMeta is the metadata of an object the cluster owns: its labels and controller reference.
func ownedMeta(c *api.EtcdCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          ClusterLabels(c.Name),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(c)},
	}
}

func selectorLabels(cluster string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelCluster: cluster}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP,
	}
}
