package cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// leafUse is a leaf in use, and the trust key of the CAs that must have signed it.
type leafUse struct {
	where string
	cert  []byte
	key   string
}

// leavesInUse are the leaves members serve and present now, and those their Secrets hold,
// which the kubelet may put in their pods at any moment.
func (s *rotationSim) leavesInUse() []leafUse {
	var out []leafUse
	add := func(where string, data map[string][]byte) {
		out = append(out, leafUse{where + " " + member.KeyPeerCert, data[member.KeyPeerCert], member.KeyPeerCA})
		if member.ClientTLS(s.c) {
			out = append(out, leafUse{where + " " + member.KeyServerCert, data[member.KeyServerCert], member.KeyServerCA},
				leafUse{where + " " + member.KeyClientCert, data[member.KeyClientCert], member.KeyClientCA})
		}
	}
	for ord, m := range s.members {
		add(fmt.Sprintf("served by member %d:", ord), m.volume)
		add(fmt.Sprintf("in member %d's Secret:", ord), s.f.secretData(member.TLSSecretName(s.c.Name, ord)))
	}
	if member.ClientTLS(s.c) {
		out = append(out, leafUse{"the client Secret's tls.crt", s.f.secretData(member.ClientTLSSecretName(s.c.Name))["tls.crt"], member.KeyClientCA})
	}
	return out
}

// check fails the test if two members, or a member and a client of the operator's, may not
// trust each other now.
func (s *rotationSim) check(when string) {
	s.t.Helper()
	for _, u := range s.leavesInUse() {
		if strings.HasPrefix(u.where, "in ") || strings.HasPrefix(u.where, "the client") {
			s.noGoingBack(when, u.where, u.cert)
		}
		for ord, m := range s.members {
			if !s.signedBy(u.cert, m.trusts[u.key]) {
				s.t.Fatalf("%s: the leaf %s is of a CA that member %d's etcd does not trust (%s)", when, u.where, ord, u.key)
			}
			restarted := parsedCerts(s.f.secretData(member.TLSSecretName(s.c.Name, ord))[u.key])
			if !s.signedBy(u.cert, restarted) {
				s.t.Fatalf("%s: the leaf %s is of a CA that member %d's Secret does not trust (%s): a restart would cut it off", when, u.where, ord, u.key)
			}
		}
		if u.key == member.KeyServerCA {
			if clients := parsedCerts(s.f.secretData(member.ClientTLSSecretName(s.c.Name))["ca.crt"]); !s.signedBy(u.cert, clients) {
				s.t.Fatalf("%s: the leaf %s is of a CA the client Secret's ca.crt does not hold", when, u.where)
			}
		}
	}
}

// memberDownWhileReissuing takes member 1 down for a few steps once leaves of the new CA are
// issued, as a node that goes away would: the new leaves stay (no leaf goes back to a CA it
// left, which check sees), and the rotation waits for the member.
func (s *rotationSim) memberDownWhileReissuing(step int) {
	p := s.members[1].pod
	switch {
	case !s.downed && slices.ContainsFunc(s.last.tls.Rotations, func(r plan.PortRotation) bool { return r.Phase == api.CARotationReissuing }):
		s.downed, s.downSince, p.Status.Phase = true, step, corev1.PodPending
	case s.downed && step == s.downSince+3:
		p.Status.Phase = corev1.PodRunning
	}
}

// noGoingBack fails the test if the leaf at where is of a CA it had left.
func (s *rotationSim) noGoingBack(when, where string, cert []byte) {
	s.t.Helper()
	certs := parsedCerts(cert)
	if len(certs) == 0 {
		return
	}
	issuer := certs[0].Issuer.String()
	seen := s.issuers[where]
	if n := len(seen); n > 0 && seen[n-1] == issuer {
		return
	}
	if slices.Contains(seen, issuer) {
		s.t.Fatalf("%s: the leaf %s is of %s again, after %v", when, where, issuer, seen)
	}
	s.issuers[where] = append(seen, issuer)
}

// signedBy: the leaf cert opens with chains to one of cas through the intermediates that
// follow it, as a TLS peer verifies it; remembered, since the check asks the same questions
// after every step.
func (s *rotationSim) signedBy(cert []byte, cas []*x509.Certificate) bool {
	for _, ca := range cas {
		key := string(cert) + "|" + pki.Fingerprint(ca)
		ok, seen := s.signed[key]
		if !seen {
			ok = chainsTo(parsedCerts(cert), ca)
			s.signed[key] = ok
		}
		if ok {
			return true
		}
	}
	return false
}

// chainsTo: chain's leaf (its first certificate) chains to ca through the intermediates that
// follow it, whatever its usages and lifetime.
func chainsTo(chain []*x509.Certificate, ca *x509.Certificate) bool {
	if len(chain) == 0 {
		return false
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(ca)
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: chain[0].NotBefore.Add(time.Minute),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

// done: no port rotates, every pod trusts what its Secret does, and no CA Secret keeps a
// second CA.
func (s *rotationSim) done() bool {
	for _, r := range s.last.tls.Rotations {
		if r.Phase != "" {
			return false
		}
	}
	for _, name := range []string{member.PeerCASecretName(s.c.Name), member.ClientCASecretName(s.c.Name)} {
		if sec, err := s.f.kube.CoreV1().Secrets("ns").Get(context.Background(), name, metav1.GetOptions{}); err == nil && len(sec.Data[caNextCert]) > 0 {
			return false
		}
	}
	return s.outdated() < 0
}

// trustsOnly fails the test unless every member's etcd trusts exactly the CAs of caPEM under
// key.
func (s *rotationSim) trustsOnly(key string, caPEM []byte) {
	s.t.Helper()
	want := pki.Fingerprints(caPEM)
	for ord, m := range s.members {
		var got []string
		for _, c := range m.trusts[key] {
			got = append(got, pki.Fingerprint(c))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			s.t.Errorf("member %d trusts %v under %s, want %v alone", ord, got, key, want)
		}
	}
}

// rotationScenario is a cluster, and what starts its rotation once its members run.
type rotationScenario struct {
	name    string
	cluster *api.EtcdCluster
	objs    func(t *testing.T) []runtime.Object
	// rotate starts the rotation; after checks the world once it is done.
	rotate func(s *rotationSim)
	after  func(s *rotationSim)
	// deps, when set, changes the operator's dependencies (its flags) before it starts.
	deps func(*Deps)
}

func rotationScenarios(t *testing.T) []rotationScenario {
	oldCA, newCA := userCA(t, "user CA", tlsEpoch.Add(-time.Hour)), userCA(t, "next user CA", tlsEpoch.Add(-time.Hour))
	oldRoot, oldMid := chainedCA(t, "user", tlsEpoch.Add(-time.Hour))
	newRoot, newMid := chainedCA(t, "next user", tlsEpoch.Add(-time.Hour))
	peerNames := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	clientNames := append([]string{"demo-client.ns.svc"}, peerNames...)
	changeSecret := func(name string, names []string) func(s *rotationSim) {
		return func(s *rotationSim) {
			if _, err := s.f.kube.CoreV1().Secrets("ns").Update(context.Background(),
				userSecret(s.t, name, newCA, names, tlsEpoch, 90*24*time.Hour), metav1.UpdateOptions{}); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	return []rotationScenario{
		{name: "the operator's CAs, asked for", cluster: withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{}),
			rotate: func(s *rotationSim) { s.c.Annotations = map[string]string{api.AnnotationRotateCA: "2026-11-25"} },
			after: func(s *rotationSim) {
				s.trustsOnly(member.KeyPeerCA, s.f.secretData("demo-peer-ca")["tls.crt"])
				s.trustsOnly(member.KeyClientCA, s.f.secretData("demo-client-ca")["tls.crt"])
				s.trustsOnly(member.KeyServerCA, s.f.secretData("demo-client-ca")["tls.crt"])
			}},
		{name: "a user's peer CA changed", cluster: withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil),
			objs: func(t *testing.T) []runtime.Object {
				return []runtime.Object{userSecret(t, "peers", oldCA, peerNames, tlsEpoch, 90*24*time.Hour)}
			},
			rotate: changeSecret("peers", peerNames),
			after:  func(s *rotationSim) { s.trustsOnly(member.KeyPeerCA, newCA.CertPEM) }},
		{name: "a user's peer CA that issues through an intermediate changed", cluster: withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil),
			objs: func(t *testing.T) []runtime.Object {
				return []runtime.Object{chainedSecret(t, "peers", oldRoot, oldMid, peerNames, tlsEpoch)}
			},
			rotate: func(s *rotationSim) {
				if _, err := s.f.kube.CoreV1().Secrets("ns").Update(context.Background(), chainedSecret(s.t, "peers", newRoot, newMid, peerNames, tlsEpoch),
					metav1.UpdateOptions{}); err != nil {
					s.t.Fatal(err)
				}
			},
			after: func(s *rotationSim) { s.trustsOnly(member.KeyPeerCA, newRoot.CertPEM) }},
		{name: "a user's client CA changed", cluster: withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{SecretName: "clients"}),
			objs: func(t *testing.T) []runtime.Object {
				return []runtime.Object{userSecret(t, "clients", oldCA, clientNames, tlsEpoch, 90*24*time.Hour)}
			},
			rotate: changeSecret("clients", clientNames),
			after: func(s *rotationSim) {
				s.trustsOnly(member.KeyServerCA, newCA.CertPEM)
				s.trustsOnly(member.KeyClientCA, pki.Bundle(newCA.CertPEM, s.f.secretData("demo-client-ca")["tls.crt"]))
			}},
	}
}

// A CA rotation, from the operator's CAs or a user's, goes through its steps on a running
// cluster with no moment where two members, or a member and the operator's clients, may not
// trust each other; and so it does when a member goes down once the new leaves are issued
// (they stay), and when the operator is killed before any one of the Secret writes it makes,
// and goes on from there.
func TestTLSRotation(t *testing.T) {
	for _, sc := range rotationScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			t.Run("a member down while reissuing", func(t *testing.T) {
				t.Parallel()
				sc.simulate(t, -1)
			})
			clean, first, last := sc.simulate(t, 0)
			steps := []api.CARotationPhase{api.CARotationTrustingBoth, api.CARotationReissuing, api.CARotationDroppingOld}
			if len(clean.phases) == 0 {
				t.Error("no port rotated")
			}
			for port, got := range clean.phases {
				if !slices.Equal(got, steps) {
					t.Errorf("the %s port's steps %v, want %v", port, got, steps)
				}
			}
			for at := first + 1; at <= last; at++ {
				t.Run(fmt.Sprintf("killed before write %d", at-first), func(t *testing.T) {
					t.Parallel()
					sc.simulate(t, at)
				})
			}
		})
	}
}

// simulated is a simulation's record: the steps each port went through, in order, and the
// simulated time each step was first reported.
type simulated struct {
	phases  map[string][]api.CARotationPhase
	entered map[string]map[api.CARotationPhase]time.Time
}

// simulate runs the scenario, with the failAt-th Secret write failing (none: 0; none, and a
// member down while the leaves change: -1); it returns the record, and the count of writes
// before and after the rotation.
func (sc rotationScenario) simulate(t *testing.T, failAt int) (rec simulated, first, last int) {
	var objs []runtime.Object
	if sc.objs != nil {
		objs = sc.objs(t)
	}
	s := newRotationSim(t, sc.cluster.DeepCopy(), objs...)
	if sc.deps != nil {
		s.f.with(sc.deps)
	}
	s.start()
	sc.rotate(s)
	first, s.failAt = s.writes, failAt
	rec.phases, rec.entered = map[string][]api.CARotationPhase{}, map[string]map[api.CARotationPhase]time.Time{}
	for step := 0; ; step++ {
		ok := s.pass()
		s.check(fmt.Sprintf("step %d, after the pass", step))
		for _, r := range s.last.tls.Rotations {
			if seen := rec.phases[r.Port]; ok && r.Phase != "" && (len(seen) == 0 || seen[len(seen)-1] != r.Phase) {
				rec.phases[r.Port] = append(seen, r.Phase)
				if rec.entered[r.Port] == nil {
					rec.entered[r.Port] = map[api.CARotationPhase]time.Time{}
				}
				rec.entered[r.Port][r.Phase] = s.now
			}
		}
		if ok && s.done() {
			break
		}
		if step > 200 {
			t.Fatalf("the rotation did not end; last steps %+v", s.last.tls.Rotations)
		}
		if failAt < 0 {
			s.memberDownWhileReissuing(step)
		}
		if ord := s.outdated(); ok && ord >= 0 {
			s.restart(ord)
			s.check(fmt.Sprintf("step %d, after member %d restarted", step, ord))
		}
		s.refresh(step % len(s.members))
		s.check(fmt.Sprintf("step %d, after member %d's volume refreshed", step, step%len(s.members)))
	}
	if s.last.tls.Problem != nil {
		t.Errorf("problem %+v after the rotation", s.last.tls.Problem)
	}
	sc.after(s)
	return rec, first, s.writes
}

// The client port keeps its old CA for --client-ca-overlap (Deps.HoldersRefresh; zero is the
// default) after its leaves switch to the new CA (Reissuing), and for no more than the
// members' refresh needs beyond it.
func TestTLSRotationClientOverlap(t *testing.T) {
	sc := rotationScenarios(t)[0]
	for _, overlap := range []time.Duration{0, 40 * time.Second, 10 * time.Minute} {
		t.Run(fmt.Sprint(overlap), func(t *testing.T) {
			sc := sc
			sc.deps = func(d *Deps) { d.HoldersRefresh = overlap }
			rec, _, _ := sc.simulate(t, 0)
			want := overlap
			if overlap == 0 {
				want = plan.DefaultHoldersRefresh
			}
			client := rec.entered["client"]
			held := client[api.CARotationDroppingOld].Sub(client[api.CARotationReissuing])
			// Passes come every 30 s in the simulation and the members' volumes are
			// refreshed one a pass: the drop comes within a few passes of its earliest.
			if held < want || held > want+2*time.Minute {
				t.Errorf("the client port dropped its old CA %s after its switch, want %s to %s", held, want, want+2*time.Minute)
			}
		})
	}
}

// An operator's CA starts to rotate at two thirds of its life, or when the rotate-ca
// annotation holds a value its Secret has not recorded: the new CA is kept beside the old one
// with the value, in one write. The same value never starts a second rotation, nor does a
// value set before the CA was made.
func TestTLSRotationStarts(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	c.Spec.TLS.CALifetime = &metav1.Duration{Duration: 3000 * time.Hour}
	c.Annotations = map[string]string{api.AnnotationRotateCA: "before"}
	f := newFixture(t, c)
	tlsPassAt(t, f, c, tlsEpoch)
	ca := f.secretData("demo-peer-ca")
	nextOf := func() []byte { return f.secretData("demo-peer-ca")[caNextCert] }
	if tlsPassAt(t, f, c, tlsEpoch.Add(time.Hour)); nextOf() != nil {
		t.Fatal("a rotation started for a value set before the CA was made")
	}
	c.Annotations[api.AnnotationRotateCA] = "now"
	o := tlsPassAt(t, f, c, tlsEpoch.Add(2*time.Hour))
	if nextOf() == nil || string(f.secretData("demo-peer-ca")["tls.crt"]) != string(ca["tls.crt"]) {
		t.Fatal("asked for, no new CA kept beside the old one")
	}
	// With no member pod, nothing runs that trusts the old CA alone: the leaves are the new
	// CA's at once.
	if o.tls.Status.PeerCARotation != api.CARotationReissuing {
		t.Errorf("status.tls.peerCARotation %q, want Reissuing", o.tls.Status.PeerCARotation)
	}
	if ev := drainEvents(f); !strings.Contains(ev, "CARotationStarted") || !strings.Contains(ev, "rotate-ca=now") {
		t.Errorf("events %q, want the start and why", ev)
	}
	next := nextOf()
	for i := 0; i < 3; i++ {
		tlsPassAt(t, f, c, tlsEpoch.Add(3*time.Hour))
	}
	if got := f.secretData("demo-peer-ca"); string(got["tls.crt"]) != string(next) || got[caNextCert] != nil {
		t.Fatal("the rotation did not put the new CA in place of the old")
	}
	if tlsPassAt(t, f, c, tlsEpoch.Add(4*time.Hour)); nextOf() != nil {
		t.Error("the same value started a second rotation")
	}

	// Two thirds of the new CA's life: due.
	cur, err := pki.ParseCertificates(next)
	if err != nil {
		t.Fatal(err)
	}
	if tlsPassAt(t, f, c, pki.RenewAt(cur[0]).Add(-time.Minute)); nextOf() != nil {
		t.Error("a rotation started before two thirds of the CA's life")
	}
	tlsPassAt(t, f, c, pki.RenewAt(cur[0]))
	if nextOf() == nil {
		t.Error("no rotation at two thirds of the CA's life")
	}
	if ev := drainEvents(f); !strings.Contains(ev, "two thirds of its life") {
		t.Errorf("events %q, want the start said with its cause", ev)
	}
}

// A pod that recorded other CAs than its Secret trusts now is out of date, and never restarted
// in place; a pod made before pods recorded anything is out of date only while a rotation has
// the Secrets trust a bundle. A pod made now records what its Secret trusts.
func TestPodsTrustingOtherCAs(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	c.Spec.Version, c.Status.CurrentVersion = "3.6.16", "3.6.16"
	oldCA, newCA := userCA(t, "old", tlsEpoch), userCA(t, "new", tlsEpoch)
	secret := map[string][]byte{member.KeyPeerCA: oldCA.CertPEM}
	bundle := map[string][]byte{member.KeyPeerCA: pki.Bundle(oldCA.CertPEM, newCA.CertPEM)}
	o := observed(c)
	o.initImage, o.memberTrust, o.trustSettled = "x", map[int]map[string][]byte{0: secret, 1: secret, 2: secret}, true
	for _, ord := range []int{1, 2} {
		o.pods[ord] = member.Pod(c, member.Template{Ordinal: ord, ClusterState: "new", InitialCluster: []int{0},
			Trust: member.TrustStamp(secret, true, false)}, "x")
	}
	if s := o.state(tlsEpoch); s.Pods[0].Outdated || s.Pods[1].Outdated {
		t.Fatalf("pods trusting what their Secrets do, one recording nothing: %+v, %+v", s.Pods[0], s.Pods[1])
	}
	o.memberTrust[1], o.memberTrust[0], o.trustSettled = bundle, bundle, false
	c.Spec.Version = "3.6.17"
	s := o.state(tlsEpoch)
	if !s.Pods[1].Outdated || s.Pods[1].ImageOnly {
		t.Errorf("a pod that recorded the old CA alone, its Secret trusting both, with a new version: %+v; want rolled, not in place", s.Pods[1])
	}
	if !s.Pods[0].Outdated || s.Pods[0].ImageOnly {
		t.Errorf("a pod that recorded nothing, a rotation under way: %+v; want rolled", s.Pods[0])
	}
	if !s.Pods[2].Outdated || !s.Pods[2].ImageOnly {
		t.Errorf("a pod whose Secret still trusts what it did, with a new version: %+v; want changed in place", s.Pods[2])
	}

	f := newFixture(t, c)
	if _, err := f.r.perform(context.Background(), c, o, plan.Action{Kind: plan.ActionCreatePod, Ordinal: 0, ClusterState: "existing",
		InitialCluster: []int{0, 1, 2}, PodVersion: "3.6.16"}, "test"); err != nil {
		t.Fatal(err)
	}
	made, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "demo-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := made.Annotations[member.AnnotationTrust], member.TrustStamp(bundle, true, false); got != want {
		t.Errorf("pod made with record %q, want %q", got, want)
	}
}
