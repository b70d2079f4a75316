// Package member is the central object of the operator: an etcd member, its names and URLs, its
// pod (built from a Template, and read back from the pod by ReadTemplate), and the headless
// peer Service and the client Service, with their names and labels. Every function is pure.
package member

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// Ports every member listens on; MovePort only while the peers move on or off TLS.
const (
	ClientPort int32 = 2379
	PeerPort   int32 = peermove.PeerPort
	MovePort   int32 = peermove.MovePort
)

// MovePortName names MovePort in the member Services.
const MovePortName = "peer-move"

// Label keys the operator puts on the objects it owns.
const (
	// LabelCluster holds the owning EtcdCluster's name.
	LabelCluster = "etcd.operator.dev/cluster"
	// LabelMember holds the member name on member pods.
	LabelMember = "etcd.operator.dev/member"
	// LabelMetricsPort names, on a member pod, the port of its etcd container that serves
	// etcd's metrics in plaintext (MetricsPortOf): a scrape keeps that port's target and
	// drops the other, which may take TLS only (deploy/monitoring/). It follows from how the
	// pod's etcd serves its client port, which only a new pod changes; the operator sets it
	// when it makes the pod, and patches it in place on a pod that lacks it or says otherwise
	// (MetadataPatchFor), without a restart.
	LabelMetricsPort = "etcd.operator.dev/metrics-port"
	// LabelBackupCluster holds, on an EtcdBackup's pods, the cluster they snapshot; the
	// cluster's NetworkPolicy lets them reach the client port.
	LabelBackupCluster = "etcd.operator.dev/backup-cluster"
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

// Name is the name of the member (and its pod) with the given ordinal (naming.Name).
func Name(cluster string, ordinal int) string { return naming.Name(cluster, ordinal) }

// Ordinal parses the ordinal out of a member name of the cluster; ok is false when the name
// does not belong to the cluster (naming.Ordinal).
func Ordinal(cluster, member string) (ordinal int, ok bool) { return naming.Ordinal(cluster, member) }

// MemberServiceName is the member's own Service: a virtual IP in front of whichever pod the
// member has, which keeps the member's address when its pod is made again.
func MemberServiceName(cluster string, ordinal int) string { return Name(cluster, ordinal) }

// Host is the member's stable DNS name: its own Service's. Cluster DNS answers it with the
// same address for the Service's life, so a peer never meets a stale or negative answer for
// a member whose pod was made again (it would keep either for up to CoreDNS's TTL, see dnsutil.TrustAfter).
func Host(cluster, namespace string, ordinal int) string {
	return fmt.Sprintf("%s.%s.svc", MemberServiceName(cluster, ordinal), namespace)
}

// HeadlessHost is the member's name through the headless Service: the pod's own record.
// Members added before the member Services keep it in their peer URL.
func HeadlessHost(cluster, namespace string, ordinal int) string {
	return fmt.Sprintf("%s.%s.%s.svc", Name(cluster, ordinal), PeerServiceName(cluster), namespace)
}

// PeerURL is the URL other members dial to reach a member the operator adds: https with
// peer TLS.
func PeerURL(c *api.EtcdCluster, ordinal int) string {
	return peerURL(peerScheme(c), Host(c.Name, c.Namespace, ordinal))
}

// HeadlessPeerURL is the peer URL of a member added before the member Services.
func HeadlessPeerURL(c *api.EtcdCluster, ordinal int) string {
	return peerURL(peerScheme(c), HeadlessHost(c.Name, c.Namespace, ordinal))
}

func peerURL(scheme, host string) string {
	return fmt.Sprintf("%s://%s:%d", scheme, host, PeerPort)
}

// IsPeerURL reports whether u is a peer URL the operator gives the member: PeerURL, or the
// HeadlessPeerURL of a member added before the member Services.
func IsPeerURL(c *api.EtcdCluster, ordinal int, u string) bool {
	return u == PeerURL(c, ordinal) || u == HeadlessPeerURL(c, ordinal)
}

// ClientURLOf is the client URL on the host of a member's peer URL: a member reached by its
// own Service for peers is reached by it for clients too, and one on the headless name keeps
// that. The scheme is the client port's as spec.tls sets it (https with client TLS), whatever
// the peers use.
func ClientURLOf(c *api.EtcdCluster, peerURL string) string {
	return clientURLOn(scheme(ClientTLS(c)), peerURL)
}

// clientURLOn is ClientURLOf with the given scheme.
func clientURLOn(scheme, peerURL string) string {
	u, err := url.Parse(peerURL)
	if err != nil {
		return peerURL
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(int(ClientPort)))
	return u.String()
}

// ServiceClientURL is the URL of the client Service, as spec.tls asks.
func ServiceClientURL(c *api.EtcdCluster) string { return ServiceClientURLOver(c, ClientTLS(c)) }

// ServiceClientURLOver is the URL of the client Service, https when tls.
func ServiceClientURLOver(c *api.EtcdCluster, tls bool) string {
	return fmt.Sprintf("%s://%s:%d", scheme(tls), ClientServiceHost(c), ClientPort)
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

// HostOrdinal is the ordinal of the member of the cluster whose peer URL is peerURL, read from
// the URL's host alone: Host or HeadlessHost of that ordinal, in the cluster's namespace.
// Scheme and port are not part of a member's identity: a member whose peer URL moves from
// http to https, or to another port, keeps its ordinal. ok is false for any other host.
func HostOrdinal(cluster, namespace, peerURL string) (ordinal int, ok bool) {
	u, err := url.Parse(peerURL)
	if err != nil || u.Host == "" {
		return 0, false
	}
	host := u.Hostname()
	label, _, _ := strings.Cut(host, ".")
	ordinal, ok = Ordinal(cluster, label)
	if !ok || (host != Host(cluster, namespace, ordinal) && host != HeadlessHost(cluster, namespace, ordinal)) {
		return 0, false
	}
	return ordinal, true
}

// MemberOrdinal is the ordinal of an etcd member of the cluster, from what etcd lists of it.
// The operator starts each member with the name Name(cluster, ordinal) and one peer URL on
// that ordinal's host (HostOrdinal); a member that has not started yet has no name, and its
// peer URL's host alone says. ok is false for a foreign member: not exactly one peer URL, a
// host the operator does not build for the cluster and namespace, or a name that is not the
// cluster's or names another ordinal than the host.
func MemberOrdinal(cluster, namespace string, m etcdutil.Member) (ordinal int, ok bool) {
	if len(m.PeerURLs) != 1 {
		return 0, false
	}
	ordinal, ok = HostOrdinal(cluster, namespace, m.PeerURLs[0])
	if !ok {
		return 0, false
	}
	if m.Name == "" {
		return ordinal, true
	}
	if named, ok := Ordinal(cluster, m.Name); !ok || named != ordinal {
		return 0, false
	}
	return ordinal, true
}

// PodClientURL is the URL the operator dials to reach a member: its pod IP, never DNS; https
// when it dials with TLS (DialTLS).
func PodClientURL(podIP string, tls bool) string {
	return fmt.Sprintf("%s://%s", scheme(tls), net.JoinHostPort(podIP, strconv.Itoa(int(ClientPort))))
}
