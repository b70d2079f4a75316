package member

import (
	"fmt"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// TLS of a member pod. The operator keeps one Secret per member (TLSSecretName) holding
// every certificate and key the member's etcd and member-init use, under the keys below,
// whether the operator issued them or copied them from a user's Secret: pods never mount a
// user's Secret, so a Secret the operator has not checked never reaches etcd. It is mounted
// whole (never with subPath) at TLSDir, so that renewed certificates reach the running
// container without a restart.
const (
	// TLSDir is where the member's Secret is mounted in the etcd container.
	TLSDir = "/etc/etcd/tls"
	// TLSVolumeName is the volume of the member's Secret.
	TLSVolumeName = "tls"

	// KeyPeerCert and KeyPeerKey are the member's peer certificate (server and client
	// authentication, for every name the member is dialled by) and its key; KeyPeerCA the CAs
	// a peer's certificate must be signed by. Present with peer TLS.
	KeyPeerCert = "peer.crt"
	KeyPeerKey  = "peer.key"
	KeyPeerCA   = "peer-ca.crt"

	// KeyServerCert and KeyServerKey are the client port's server certificate (the member's
	// names, the client Service's, localhost and 127.0.0.1) and its key; KeyServerCA the CA
	// that signed it, which clients of the port verify it with. Present with client TLS.
	KeyServerCert = "server.crt"
	KeyServerKey  = "server.key"
	KeyServerCA   = "server-ca.crt"

	// KeyClientCA is what the client port trusts: the user's CA, if any, and the operator's
	// client CA. Present with client TLS.
	KeyClientCA = "client-ca.crt"

	// KeyClientCert and KeyClientKey are a client certificate of the operator's client CA,
	// without names (etcd checks a client certificate's names against the address it
	// connects from), for member-init and tools in the pod. Present with client TLS.
	KeyClientCert = "client.crt"
	KeyClientKey  = "client.key"
)

// MetricsPort serves etcd's metrics and health endpoints in plaintext when the client port
// uses TLS: the kubelet's probes cannot present a client certificate, and the client port
// demands one.
const MetricsPort int32 = 2381

// Names of the etcd container's ports that a scrape tells apart (deploy/monitoring/).
const (
	ClientPortName  = "client"
	MetricsPortName = "metrics"
)

// MetricsPortOf is the name of the port on which a member pod whose client port is served as
// m serves etcd's metrics in plaintext: the client port, or, once that takes TLS, the metrics
// port (which the pod declares then only). It is the value of LabelMetricsPort.
func MetricsPortOf(m ClientMode) string {
	if m.TLS() {
		return MetricsPortName
	}
	return ClientPortName
}

// TLSKeys are the keys of a member's Secret its pod needs: those of the peer port with peer
// TLS, those of the client port when it serves TLS (client).
func TLSKeys(c *api.EtcdCluster, client bool) []string { return TLSKeysOf(PeerTLS(c), client) }

// TLSKeysOf are the keys of a member's Secret a pod needs that listens for peers over TLS
// (peer) and serves its client port over TLS (client).
func TLSKeysOf(peer, client bool) []string {
	var keys []string
	if peer {
		keys = append(keys, KeyPeerCert, KeyPeerKey, KeyPeerCA)
	}
	if client {
		keys = append(keys, KeyServerCert, KeyServerKey, KeyServerCA, KeyClientCA, KeyClientCert, KeyClientKey)
	}
	return keys
}

// ClientMode is how a member's client port is served. spec.tls.client says where a cluster is
// going (ClientPlain or ClientSecure); ClientDual is the step between, for moving a running
// cluster's client port on or off TLS without a moment where the operator, member-init or a
// member's peers cannot reach it: etcd serves plaintext and TLS on the same port (it tells them
// apart by the first bytes of each connection), and demands a client certificate on TLS only.
type ClientMode string

const (
	ClientPlain  ClientMode = "http"
	ClientDual   ClientMode = "http+https"
	ClientSecure ClientMode = "https"
)

// TLS reports whether the port serves TLS, and so needs the client port's certificates.
func (m ClientMode) TLS() bool { return m == ClientDual || m == ClientSecure }

// SpecClientMode is the client mode spec.tls asks for.
func SpecClientMode(c *api.EtcdCluster) ClientMode {
	if ClientTLS(c) {
		return ClientSecure
	}
	return ClientPlain
}

// clientMode is how the template's pod serves its client port: Template.Client, or else as
// the spec asks.
func (t Template) clientMode(c *api.EtcdCluster) ClientMode {
	if t.Client != "" {
		return t.Client
	}
	return SpecClientMode(c)
}

// dialScheme is the scheme member-init dials the other members' client ports with: the pod's
// own client port's, and while that serves both (ClientDual), what the operator dialled the
// cluster with when it made the pod (Template.DialTLS): the other members serve it then.
func (t Template) dialScheme(c *api.EtcdCluster) string {
	switch t.clientMode(c) {
	case ClientSecure:
		return "https"
	case ClientDual:
		return scheme(t.DialTLS)
	}
	return "http"
}

// tlsSecretMode lets the pod's fsGroup read the member's Secret and no one else: etcd runs as
// a user that is not the files' owner (root), and the private keys must not be readable by
// other users of the node's filesystem. Every member pod has an fsGroup (podSecurityContext),
// which the kubelet gives the Secret's files and the container's processes.
const tlsSecretMode int32 = 0o440

// PeerTLS reports whether the cluster's members talk to each other over TLS.
func PeerTLS(c *api.EtcdCluster) bool { return c.Spec.TLS != nil && c.Spec.TLS.Peer != nil }

// ClientTLS reports whether the cluster's client port uses TLS.
func ClientTLS(c *api.EtcdCluster) bool { return c.Spec.TLS != nil && c.Spec.TLS.Client != nil }

// TLSSecretName is the Secret of the member with the given ordinal, mounted in its pod.
func TLSSecretName(cluster string, ordinal int) string { return Name(cluster, ordinal) + "-tls" }

// PeerCASecretName is the Secret of the CA the operator issues peer certificates from, when
// no user Secret is named for peers.
func PeerCASecretName(cluster string) string { return cluster + "-peer-ca" }

// ClientCASecretName is the Secret of the operator's client CA, which the client port trusts
// whenever it uses TLS: the operator, member-init and backup pods authenticate with it.
func ClientCASecretName(cluster string) string { return cluster + "-client-ca" }

// ClientTLSSecretName is the Secret with a client certificate of the cluster (ca.crt,
// tls.crt, tls.key), for applications, the operator and backup pods.
func ClientTLSSecretName(cluster string) string { return cluster + "-client-tls" }

// KeyCA is the CA certificate in the kubernetes.io/tls layout that cert-manager writes (beside
// corev1.TLSCertKey and corev1.TLSPrivateKeyKey): in ClientTLSSecretName, the CA that signed
// the members' client-port certificates.
const KeyCA = "ca.crt"

// MemberNames are the DNS names the member with the given ordinal is dialled by, which its
// certificates must carry: its own Service's (short, with the namespace, and Host) and its
// pod's record through the headless Service (HeadlessHost).
func MemberNames(c *api.EtcdCluster, ordinal int) []string {
	name := MemberServiceName(c.Name, ordinal)
	return []string{
		name,
		name + "." + c.Namespace,
		Host(c.Name, c.Namespace, ordinal),
		HeadlessHost(c.Name, c.Namespace, ordinal),
	}
}

// ClientServiceNames are the DNS names of the client Service, which every member's client-port
// certificate carries: clients reach any member through it.
func ClientServiceNames(c *api.EtcdCluster) []string {
	name := ClientServiceName(c.Name)
	return []string{name, name + "." + c.Namespace, ClientServiceHost(c)}
}

// ClientServiceHost is the client Service's full name. The operator, which dials members at
// their pod IPs, checks their client-port certificates against it.
func ClientServiceHost(c *api.EtcdCluster) string {
	return fmt.Sprintf("%s.%s.svc", ClientServiceName(c.Name), c.Namespace)
}

// peerScheme is the scheme of the cluster's peer URLs.
func peerScheme(c *api.EtcdCluster) string { return scheme(PeerTLS(c)) }

// advertisedScheme is the scheme of the client URLs a member advertises: https whenever its
// client port serves TLS.
func advertisedScheme(m ClientMode) string { return scheme(m.TLS()) }

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}
