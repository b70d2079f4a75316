// Package member is the central object of the operator: an etcd member, its names and URLs, its
// pod (built from a Template, and read back from the pod by ReadTemplate), and the headless
// peer Service and the client Service, with their names and labels. Every function is pure.
package member

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Ports every member listens on.
const (
	ClientPort int32 = 2379
	PeerPort   int32 = 2380
)

// Label keys the operator puts on the objects it owns.
const (
	// LabelCluster holds the owning EtcdCluster's name.
	LabelCluster = "etcd.operator.dev/cluster"
	// LabelMember holds the member name on member pods.
	LabelMember = "etcd.operator.dev/member"
	// LabelName is the well-known application name label.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is the well-known instance label (the cluster name).
	LabelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy marks objects this operator manages; informers watch only those.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "etcd-operator"
)

// ManagedSelector selects every object the operator manages, in any cluster.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
}

// ClusterLabels are the labels of every object owned by the named cluster.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{
		LabelName:      "etcd",
		LabelInstance:  cluster,
		LabelManagedBy: ManagedByValue,
		LabelCluster:   cluster,
	}
}

// ClusterSelector selects the member pods of the named cluster.
func ClusterSelector(cluster string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue, LabelCluster: cluster})
}

// PeerServiceName is the headless Service that gives members their stable DNS names.
func PeerServiceName(cluster string) string { return cluster }

// ClientServiceName is the Service clients use.
func ClientServiceName(cluster string) string { return cluster + "-client" }

// MemberName is the name of the member (and its pod) with the given ordinal.
func Name(cluster string, ordinal int) string {
	return cluster + "-" + strconv.Itoa(ordinal)
}

// MemberOrdinal parses the ordinal out of a member name of the cluster. ok is false when the
// name does not belong to the cluster.
func Ordinal(cluster, member string) (ordinal int, ok bool) {
	rest, found := strings.CutPrefix(member, cluster+"-")
	if !found || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// MemberHost is the member's stable DNS name through the headless Service.
func Host(cluster, namespace string, ordinal int) string {
	return fmt.Sprintf("%s.%s.%s.svc", Name(cluster, ordinal), PeerServiceName(cluster), namespace)
}

// PeerURL is the URL other members dial to reach the member.
func PeerURL(cluster, namespace string, ordinal int) string {
	return fmt.Sprintf("http://%s:%d", Host(cluster, namespace, ordinal), PeerPort)
}

// ClientURL is the URL the member advertises to clients.
func ClientURL(cluster, namespace string, ordinal int) string {
	return fmt.Sprintf("http://%s:%d", Host(cluster, namespace, ordinal), ClientPort)
}

// ServiceClientURL is the URL of the client Service.
func ServiceClientURL(cluster, namespace string) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", ClientServiceName(cluster), namespace, ClientPort)
}

// NameFromPeerURL recovers the member name from a peer URL the operator built. etcd
// reports no name for a member that has not started yet, so the peer URL is the identity.
func NameFromPeerURL(peerURL string) (string, bool) {
	host, found := strings.CutPrefix(peerURL, "http://")
	if !found {
		host, found = strings.CutPrefix(peerURL, "https://")
	}
	if !found {
		return "", false
	}
	name, _, ok := strings.Cut(host, ".")
	return name, ok && name != ""
}

// PodClientURL is the URL the operator dials to reach a member: its pod IP, never DNS.
func PodClientURL(podIP string) string {
	if strings.Contains(podIP, ":") {
		return fmt.Sprintf("http://[%s]:%d", podIP, ClientPort)
	}
	return fmt.Sprintf("http://%s:%d", podIP, ClientPort)
}
