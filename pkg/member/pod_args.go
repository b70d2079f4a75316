package member

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// peerURL is the peer URL of the member with the given ordinal, as the template knows it:
// else on the member's Host, on the first endpoint the pod listens on (outside a move, the
// spec's: PeerURL).
func (t Template) peerURL(c *api.EtcdCluster, ordinal int) string {
	if u, ok := t.PeerURLs[ordinal]; ok {
		return u
	}
	return t.peerListen(c)[0].URL(Host(c.Name, c.Namespace, ordinal))
}

// peerListen is what the pod's etcd listens on for its peers: Template.PeerListen, or else
// the peer port as spec.tls asks.
func (t Template) peerListen(c *api.EtcdCluster) peermove.Listen {
	if len(t.PeerListen) > 0 {
		return t.PeerListen
	}
	return peermove.Listen{SpecPeerEndpoint(c)}
}

// SpecPeerEndpoint is where spec.tls puts the members' peer URLs: the peer port, over TLS
// with peer TLS.
func SpecPeerEndpoint(c *api.EtcdCluster) peermove.Endpoint { return peermove.Final(PeerTLS(c)) }

// listenPeerURLs is etcd's --listen-peer-urls for the endpoints.
func listenPeerURLs(l peermove.Listen) string {
	urls := make([]string, 0, len(l))
	for _, e := range l {
		urls = append(urls, e.URL("0.0.0.0"))
	}
	return strings.Join(urls, ",")
}

// readPeerListen is what etcd's --listen-peer-urls in argv listens on; etcd's default (http
// on the peer port) without one.
func readPeerListen(argv []string) peermove.Listen {
	for _, a := range argv {
		v, found := strings.CutPrefix(a, listenPeerFlag)
		if !found {
			continue
		}
		var eps []peermove.Endpoint
		for _, u := range strings.Split(v, ",") {
			if e, ok := peermove.Of(u); ok {
				eps = append(eps, e)
			}
		}
		if len(eps) > 0 {
			return peermove.NewListen(eps...)
		}
	}
	return peermove.Listen{peermove.Final(false)}
}

// etcdArgs are the flags of the member's etcd, of the given version.
func etcdArgs(c *api.EtcdCluster, t Template, version string) []string {
	initial := make([]string, 0, len(t.InitialCluster))
	for _, o := range t.InitialCluster {
		initial = append(initial, Name(c.Name, o)+"="+t.peerURL(c, o))
	}
	self := t.peerURL(c, t.Ordinal)
	mode := t.clientMode(c)
	args := []string{
		"--name=" + Name(c.Name, t.Ordinal),
		"--data-dir=" + DataDir,
		listenPeerFlag + listenPeerURLs(t.peerListen(c)),
		listenClientFlag + listenClientURLs(mode),
		"--advertise-client-urls=" + clientURLOn(advertisedScheme(mode), self),
		"--initial-advertise-peer-urls=" + self,
		initialClusterFlag + strings.Join(initial, ","),
		"--initial-cluster-state=" + string(t.ClusterState),
		"--initial-cluster-token=" + ClusterToken(c),
	}
	args = append(args, peerTLSArgs(t.peerListen(c).TLS(), version)...)
	args = append(args, clientTLSArgs(mode)...)
	args = append(args, quotaArgs(&c.Spec)...)
	if t.ForceNewCluster {
		args = append(args, forceNewClusterFlag)
	}
	if t.MaxLearners > 0 && etcdfacts.TakesMaxLearners(version) {
		args = append(args, fmt.Sprintf("%s=%d", etcdfacts.MaxLearnersFlag, t.MaxLearners))
	}
	return args
}

// peerTLSArgs are etcd's flags for peer TLS, when the pod listens for peers over TLS (tls);
// none without it. With them etcd also dials its peers' https URLs with its certificate. Peers must present a
// certificate of the peer CA, but etcd does not check that its names match the address a peer
// connects from: members connect from pod IPs, which no certificate names (a pod's IP is known
// only once it runs, and changes with every pod). The cluster's own CA is what admits a peer.
func peerTLSArgs(tls bool, version string) []string {
	if !tls {
		return nil
	}
	return []string{
		"--peer-cert-file=" + TLSDir + "/" + KeyPeerCert,
		"--peer-key-file=" + TLSDir + "/" + KeyPeerKey,
		"--peer-trusted-ca-file=" + TLSDir + "/" + KeyPeerCA,
		"--peer-client-cert-auth",
		skipPeerSANFlag(version) + "=true",
	}
}

// skipPeerSANFlag is the name etcd of the given version gives the flag that skips the check of
// a peer certificate's names against the peer's address: experimental in 3.5; 3.6.0 adds the
// plain name (binding it to the same setting, and deprecating the other), which 3.7 alone
// knows. The plain name from 3.6 on keeps a 3.6 <-> 3.7 upgrade or downgrade an in-place image
// change; a 3.5 <-> 3.6 one rolls members by a new pod.
func skipPeerSANFlag(version string) string {
	if major, minor := majorMinor(version); major > 3 || (major == 3 && minor >= 6) {
		return "--peer-skip-client-san-verification"
	}
	return "--experimental-peer-skip-client-san-verification"
}

// listenClientURLs is etcd's --listen-client-urls for the client mode: with ClientDual, the
// same port twice, which etcd serves as one listener that takes plaintext and TLS.
func listenClientURLs(m ClientMode) string {
	plain, secure := fmt.Sprintf("http://0.0.0.0:%d", ClientPort), fmt.Sprintf("https://0.0.0.0:%d", ClientPort)
	switch m {
	case ClientSecure:
		return secure
	case ClientDual:
		return plain + "," + secure
	}
	return plain
}

// readClientMode is the client mode of etcd's --listen-client-urls in argv, as
// listenClientURLs writes it.
func readClientMode(argv []string) ClientMode {
	for _, a := range argv {
		if v, found := strings.CutPrefix(a, listenClientFlag); found {
			plain, secure := strings.Contains(v, "http://"), strings.Contains(v, "https://")
			switch {
			case plain && secure:
				return ClientDual
			case secure:
				return ClientSecure
			}
			return ClientPlain
		}
	}
	return ClientPlain
}

// clientTLSArgs are etcd's flags for a client port that serves TLS; none without it. Clients
// must present a certificate the client port trusts (KeyClientCA); with ClientDual, those
// that connect in plaintext need none. The health endpoints the kubelet probes move to the
// plaintext metrics listener: a probe has no client certificate.
func clientTLSArgs(m ClientMode) []string {
	if !m.TLS() {
		return nil
	}
	return []string{
		"--cert-file=" + TLSDir + "/" + KeyServerCert,
		"--key-file=" + TLSDir + "/" + KeyServerKey,
		"--trusted-ca-file=" + TLSDir + "/" + KeyClientCA,
		"--client-cert-auth",
		// etcd's HTTP gateway dials the member's own client port: with a certificate that
		// carries no names, which the client port's check of names against addresses passes.
		"--client-cert-file=" + TLSDir + "/" + KeyClientCert,
		"--client-key-file=" + TLSDir + "/" + KeyClientKey,
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", MetricsPort),
	}
}

// etcdctlEnv points etcdctl in the etcd container at the member's client port with the pod's
// client certificate, so that `kubectl exec <member> -- etcdctl ...` works with client TLS as
// it does without: at 127.0.0.1, which the operator's server certificates name, or at the
// member's Service name, which a user's certificate is required to carry.
func etcdctlEnv(c *api.EtcdCluster, ordinal int, m ClientMode) []corev1.EnvVar {
	if !m.TLS() {
		return nil
	}
	host := "127.0.0.1"
	if ClientTLS(c) && c.Spec.TLS.Client.SecretName != "" {
		host = Host(c.Name, c.Namespace, ordinal)
	}
	return []corev1.EnvVar{
		{Name: "ETCDCTL_ENDPOINTS", Value: fmt.Sprintf("https://%s:%d", host, ClientPort)},
		{Name: "ETCDCTL_CACERT", Value: TLSDir + "/" + KeyServerCA},
		{Name: "ETCDCTL_CERT", Value: TLSDir + "/" + KeyClientCert},
		{Name: "ETCDCTL_KEY", Value: TLSDir + "/" + KeyClientKey},
	}
}

// initialClusterFlag is the prefix of etcd's --initial-cluster argument, which ReadTemplate
// reads back.
const initialClusterFlag = "--initial-cluster="

// listenClientFlag is the prefix of etcd's --listen-client-urls argument, whose client mode
// ReadTemplate reads back.
const listenClientFlag = "--listen-client-urls="

// listenPeerFlag is the prefix of etcd's --listen-peer-urls argument, whose scheme
// ReadTemplate reads back.
const listenPeerFlag = "--listen-peer-urls="

// forceNewClusterFlag is etcd's flag for Template.ForceNewCluster, which ReadTemplate reads
// back.
const forceNewClusterFlag = "--force-new-cluster"

// AdvertisedPeerURL is the peer URL member pod p was made with for its own member (etcd's
// --initial-advertise-peer-urls, and member-init's --peer-url for a joining member): where the
// member is added, when it joins. ok is false when p is not one of the cluster's member pods.
func AdvertisedPeerURL(c *api.EtcdCluster, p *corev1.Pod) (string, bool) {
	t, ok := ReadTemplate(c.Name, p)
	if !ok {
		return "", false
	}
	return t.peerURL(c, t.Ordinal), true
}
