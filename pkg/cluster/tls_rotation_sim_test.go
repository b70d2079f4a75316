package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A simulated world for CA rotations: ensureTLS runs pass after pass against a fake API
// server, with member pods whose etcds trust what their Secret held when their pod was made,
// serve what their Secret volume held when the kubelet last refreshed it (one member per
// step, so refreshes lag), and answer probes as etcd does. Between passes the rollout
// restarts one out-of-date pod, as rule 8 does. After every pass, restart and refresh, the
// world is checked: every leaf a member serves, presents or may serve next (its Secret's) is
// of a CA every running member trusts, and every member's Secret trusts them too (a container
// restarted at any moment reads it).

// simMember is one member of the simulated world.
type simMember struct {
	pod *corev1.Pod
	// trusts are the CAs its etcd (and member-init) trust, by trust key.
	trusts map[string][]*x509.Certificate
	// volume is its Secret's data as the kubelet last put it in its pod.
	volume map[string][]byte
}

type rotationSim struct {
	t       *testing.T
	f       *fixture
	c       *api.EtcdCluster
	now     time.Time
	members map[int]*simMember
	// writes counts the Secret writes; the failAt-th fails, as if the operator were killed
	// before it.
	writes, failAt int
	// last is the pass's observation, for what the rollout compares pods with.
	last *observation
	// signed remembers which leaf a CA signed (signedBy).
	signed map[string]bool
	// issuers are, by where a leaf is kept, the CAs its leaves were of, in order
	// (noGoingBack); downSince is the step member 1 went down (memberDownWhileReissuing).
	issuers   map[string][]string
	downed    bool
	downSince int
}

func newRotationSim(t *testing.T, c *api.EtcdCluster, objs ...runtime.Object) *rotationSim {
	s := &rotationSim{t: t, c: c, now: tlsEpoch, members: map[int]*simMember{}, signed: map[string]bool{},
		issuers: map[string][]string{}}
	s.f = newFixture(t, append([]runtime.Object{c}, objs...)...)
	s.f.with(func(d *Deps) { d.ProbeTLS = s.probe })
	fail := func(k8stesting.Action) (bool, runtime.Object, error) {
		s.writes++
		if s.writes == s.failAt {
			return true, nil, errors.New("the operator was killed")
		}
		return false, nil, nil
	}
	s.f.kube.PrependReactor("create", "secrets", fail)
	s.f.kube.PrependReactor("update", "secrets", fail)
	return s
}

// clientMode is how the cluster's pods serve their client port.
func (s *rotationSim) clientMode() member.ClientMode { return member.SpecClientMode(s.c) }

// pass runs ensureTLS once, as the pass would with the simulated pods; false when the
// operator was killed in it.
func (s *rotationSim) pass() bool {
	s.t.Helper()
	s.f.r.now = func() time.Time { return s.now }
	o := &observation{cluster: s.c, pods: map[int]*corev1.Pod{}, membersKnown: true, clientTarget: s.clientMode(),
		dialTLS: s.clientMode().TLS()}
	for ord, m := range s.members {
		o.pods[ord] = m.pod
		o.members = append(o.members, etcdutil.Member{ID: uint64(ord + 1), Name: member.Name(s.c.Name, ord),
			PeerURLs: []string{member.PeerURL(s.c, ord)}})
	}
	err := s.f.r.ensureTLS(context.Background(), s.c, o)
	if err != nil && !strings.Contains(err.Error(), "the operator was killed") {
		s.t.Fatalf("ensureTLS: %v", err)
	}
	if err == nil {
		s.last = o
	}
	s.now = s.now.Add(30 * time.Second)
	return err == nil
}

// start makes the members' pods on their Secrets, as the operator's first passes would.
func (s *rotationSim) start() {
	s.t.Helper()
	if !s.pass() || len(s.last.tls.Unready) != 0 || s.last.tls.Problem != nil {
		s.t.Fatalf("first pass: unready %v, problem %+v", s.last.tls.Unready, s.last.tls.Problem)
	}
	for ord := 0; ord < int(s.c.Spec.Size); ord++ {
		s.members[ord] = &simMember{}
		s.restart(ord)
	}
}

// restart makes member ord's pod anew: it records and trusts what its Secret holds now.
func (s *rotationSim) restart(ord int) {
	s.t.Helper()
	data := s.f.secretData(member.TLSSecretName(s.c.Name, ord))
	pod := member.Pod(s.c, member.Template{Ordinal: ord, ClusterState: "existing", InitialCluster: []int{0, 1, 2}, MemberID: uint64(ord + 1),
		Client: s.clientMode(), Trust: s.last.trustFor(ord, nil, s.clientMode())}, testInitImage)
	pod.CreationTimestamp = metav1.NewTime(s.now)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.0.%d", ord+1)}
	m := s.members[ord]
	m.pod, m.volume, m.trusts = pod, data, map[string][]*x509.Certificate{}
	for _, k := range member.TrustKeys(true, true) {
		m.trusts[k] = parsedCerts(data[k])
	}
}

// refresh is the kubelet of member ord's node putting its Secret in its pod again.
func (s *rotationSim) refresh(ord int) {
	s.members[ord].volume = s.f.secretData(member.TLSSecretName(s.c.Name, ord))
}

// outdated is the first member whose pod does not trust what its Secret does now, as rule 8
// finds it; -1 when none.
func (s *rotationSim) outdated() int {
	for ord := 0; ord < len(s.members); ord++ {
		p := s.members[ord].pod
		want := s.last.trustFor(ord, p, s.clientMode())
		if t, _ := member.ReadTemplate(s.c.Name, p); want != "" && t.Trust != want {
			return ord
		}
	}
	return -1
}

// probe answers as a simulated member's port does (etcdutil.ProbeTLS).
func (s *rotationSim) probe(_ context.Context, baseURL string, cert tls.Certificate, roots *x509.CertPool, serverName string) ([]*x509.Certificate, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(u.Host)
	ord, _ := strconv.Atoi(strings.TrimPrefix(host, "10.0.0."))
	m := s.members[ord-1]
	servedKey, trustKey := member.KeyPeerCert, member.KeyPeerCA
	if port == strconv.Itoa(int(member.ClientPort)) {
		servedKey, trustKey = member.KeyServerCert, member.KeyClientCA
	}
	chain := parsedCerts(m.volume[servedKey])
	served, inter := chain[0], x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := served.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: serverName, CurrentTime: s.now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return chain, err
	}
	var presentedChain []*x509.Certificate
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return chain, err
		}
		presentedChain = append(presentedChain, c)
	}
	presented := presentedChain[0]
	if !slices.ContainsFunc(m.trusts[trustKey], func(ca *x509.Certificate) bool { return chainsTo(presentedChain, ca) }) {
		return chain, errors.New("remote error: tls: unknown certificate authority")
	}
	// etcd checks the names of a client certificate against the address it comes from on the
	// client port (the peer port skips it: --peer-skip-client-san-verification).
	if trustKey == member.KeyClientCA && len(presented.DNSNames)+len(presented.IPAddresses) > 0 {
		return chain, errors.New("the client certificate's names do not match the address it connects from")
	}
	return chain, nil
}
