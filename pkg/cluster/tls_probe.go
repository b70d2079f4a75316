package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// What a rotation reads of the member pods and their ports.

// probe is how the pass asks a member's TLS port what it accepts and serves.
func (r *Reconciler) probe() etcdutil.TLSProbe {
	if r.deps.ProbeTLS != nil {
		return r.deps.ProbeTLS
	}
	return etcdutil.ProbeTLS
}

// rotationPods are the member pods as the port's rotation sees them, without asking them
// anything yet.
func (t *tlsPass) rotationPods(o *observation, p rotationPort) map[int]plan.RotationPod {
	out := map[int]plan.RotationPod{}
	for ord, pod := range o.pods {
		tmpl, _ := member.ReadTemplate(t.c.Name, pod)
		_, peerTLS := peerTLSPort(t.c, pod)
		out[ord] = plan.RotationPod{Uses: (p.name == "peer" && peerTLS) || (p.name == "client" && servesClientTLS(t.c, pod)), Trust: member.ParseTrust(tmpl.Trust),
			Terminating: pod.DeletionTimestamp != nil, Running: pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "",
			Created: pod.CreationTimestamp.Time}
	}
	return out
}

// peerTLSPort is the port on which member pod p's etcd takes TLS from its peers: the peer
// port, or while the peers move onto TLS, perhaps the move port; ok is false when it takes
// none (a move onto TLS that has not rolled it yet): the rotation does not ask it, and the pod
// trusts what its Secret holds when it is rolled.
func peerTLSPort(c *api.EtcdCluster, p *corev1.Pod) (port int32, ok bool) {
	t, isMember := member.ReadTemplate(c.Name, p)
	if !isMember {
		return member.PeerPort, false
	}
	for _, e := range t.PeerListen {
		if e.TLS {
			return e.Port, true
		}
	}
	return member.PeerPort, false
}

// asked: the pod's port is one a probe asks.
func asked(rp plan.RotationPod) bool { return rp.Uses && rp.Running && !rp.Terminating }

// assumeAnswers are pods whose ports, each one a probe would ask, answer as the rotation needs
// (good) or not at all.
func assumeAnswers(pods map[int]plan.RotationPod, good bool) map[int]plan.RotationPod {
	out := map[int]plan.RotationPod{}
	for ord, rp := range pods {
		if asked(rp) {
			rp.Probed, rp.Accepted, rp.ServesNew = good, good, good
			if !good {
				rp.Problem = "not asked yet"
			}
		}
		out[ord] = rp
	}
	return out
}

// probePods asks, in parallel, each pod a probe asks whether its port accepts a certificate
// of each CA the port moves to, and which leaf it serves.
func (t *tlsPass) probePods(ctx context.Context, o *observation, p rotationPort, held trustSet, pods map[int]plan.RotationPod) (map[int]plan.RotationPod, error) {
	certs, err := t.probeCerts(p)
	if err != nil {
		return nil, err
	}
	out := map[int]plan.RotationPod{}
	probed := map[int]*plan.RotationPod{}
	for ord, rp := range pods {
		out[ord] = rp
		if asked(rp) {
			probed[ord] = &rp
		}
	}
	var wg sync.WaitGroup
	for ord, rp := range probed {
		wg.Go(func() {
			defer survive(t.r.log(t.c), "probing a member's TLS port")
			t.probePod(ctx, rp, o.pods[ord], ord, p, held, certs)
		})
	}
	wg.Wait()
	for ord, rp := range probed {
		out[ord] = *rp
	}
	return out, nil
}

// probePod asks member ord's port at ip with each of certs, and fills in what it answered.
func (t *tlsPass) probePod(ctx context.Context, rp *plan.RotationPod, pod *corev1.Pod, ord int, p rotationPort, held trustSet, certs []tls.Certificate) {
	ip := pod.Status.PodIP
	port, _ := peerTLSPort(t.c, pod)
	serverName := member.Host(t.c.Name, t.c.Namespace, ord)
	if p.name == "client" {
		port, serverName = member.ClientPort, member.ClientServiceHost(t.c)
	}
	url := "https://" + net.JoinHostPort(ip, strconv.Itoa(int(port)))
	rp.Accepted = len(certs) > 0
	if len(certs) == 0 {
		rp.Problem = "the operator holds no certificate of the new CA to present"
	}
	for _, cert := range certs {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		served, err := t.r.probe()(pctx, url, cert, held.roots(p.servedKey), serverName)
		cancel()
		if len(served) > 0 {
			rp.Probed = true
			rp.ServesNew = pki.ChainSignedBy(served, held.wantCerts[p.servedKey]) != ""
		}
		if err != nil {
			rp.Accepted = false
			if rp.Problem == "" {
				rp.Problem = err.Error()
			}
		}
	}
}

// probeCerts are the client certificates a probe of the port presents, one of each CA the
// port moves to that the operator can present: one it issues, for this pass only, from its
// own CA, and on the peer port the leaf of a user's Secret (which allows client
// authentication). Not that leaf on the client port: it names the members, and etcd checks a
// client certificate's names against the address it connects from there; that members
// trust a user's new client CA is known from their pods' records alone.
func (t *tlsPass) probeCerts(p rotationPort) ([]tls.Certificate, error) {
	var out []tls.Certificate
	if p.src.ca != nil && (p.name == "client" || p.src.userSecret == "") {
		kp, err := pki.Issue(*p.src.ca.want(), pki.Request{CommonName: "etcd-operator rotation probe", Usages: pki.ClientAuth,
			Lifetime: time.Hour}, t.now)
		if err != nil {
			return nil, fmt.Errorf("issuing a certificate to probe the %s port with: %w", p.name, err)
		}
		pair, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading the certificate to probe the %s port with: %w", p.name, err)
		}
		out = append(out, pair)
	}
	if p.name == "peer" && p.src.userSecret != "" {
		// Checked by source: it parses, and its key is its own.
		if pair, err := tls.X509KeyPair(p.src.cert, p.src.key); err == nil {
			out = append(out, pair)
		}
	}
	return out, nil
}

// oldLeaves names the Secrets that hold a leaf of the port no CA it moves to signed: the
// members' (their serving leaves, and the client port's client certificates) and
// <name>-client-tls.
func (t *tlsPass) oldLeaves(ctx context.Context, members map[int]*corev1.Secret, p rotationPort, held trustSet) ([]string, error) {
	var out []string
	check := func(where string, certPEM []byte, key string) {
		if len(certPEM) > 0 && !signedByAny(certPEM, held.wantCerts[key]) && (len(out) == 0 || out[len(out)-1] != where) {
			out = append(out, where)
		}
	}
	for _, ord := range plan.SortedOrdinals(members) {
		d, where := members[ord].Data, "Secret "+members[ord].Name
		if p.name == "peer" {
			check(where, d[member.KeyPeerCert], member.KeyPeerCA)
			continue
		}
		check(where, d[member.KeyServerCert], member.KeyServerCA)
		check(where, d[member.KeyClientCert], member.KeyClientCA)
	}
	if p.name == "client" {
		name := member.ClientTLSSecretName(t.c.Name)
		s, err := t.r.secret(ctx, t.c.Namespace, name)
		if err != nil {
			return nil, err
		}
		if s != nil {
			check("Secret "+name, s.Data[corev1.TLSCertKey], member.KeyClientCA)
		}
	}
	return out, nil
}
