package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

var tlsEpoch = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func withTLS(c *api.EtcdCluster, peer, client *api.TLSSource) *api.EtcdCluster {
	c = c.DeepCopy()
	c.Spec.TLS = &api.TLSSpec{Peer: peer, Client: client}
	return c
}

// tlsPassAt runs ensureTLS once at the given time, with the fixture's actions cleared first.
func tlsPassAt(t *testing.T, f *fixture, c *api.EtcdCluster, at time.Time) *observation {
	t.Helper()
	f.kube.ClearActions()
	f.r.now = func() time.Time { return at }
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}}
	if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
		t.Fatalf("ensureTLS: %v", err)
	}
	return o
}

func (f *fixture) secretData(name string) map[string][]byte {
	f.t.Helper()
	s, err := f.kube.CoreV1().Secrets("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("secret %s: %v", name, err)
	}
	return s.Data
}

// drainEvents are the Events recorded so far, one a line.
func drainEvents(f *fixture) string {
	var out []string
	for len(f.recorder.Events) > 0 {
		out = append(out, <-f.recorder.Events)
	}
	return strings.Join(out, "\n")
}

func (f *fixture) secretWrites() []string {
	var out []string
	for _, verb := range []string{"create", "update"} {
		for _, a := range f.actions(verb, "secrets") {
			switch a := a.(type) {
			case interface{ GetObject() runtime.Object }:
				out = append(out, verb+" "+a.GetObject().(*corev1.Secret).Name)
			}
		}
	}
	return out
}

// The operator issues a cluster's CAs and every member's certificates once, keeps them while
// they are good, and renews the leaves at two thirds of their life without touching the CAs.
func TestTLSIssuesKeepsAndRenews(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	f := newFixture(t, c)

	o := tlsPassAt(t, f, c, tlsEpoch)
	if p := o.tls.Problem; p != nil || len(o.tls.Unready) != 0 {
		t.Fatalf("problem %+v, unready %v after the first pass; want none", p, o.tls.Unready)
	}
	if got := len(f.secretWrites()); got != 6 {
		t.Fatalf("writes %v, want the two CAs, the client Secret and three members' Secrets", f.secretWrites())
	}
	peerCA, clientCA := f.secretData("demo-peer-ca"), f.secretData("demo-client-ca")
	m0 := f.secretData(member.TLSSecretName("demo", 0))
	if _, p := pki.Check(m0[member.KeyPeerCert], m0[member.KeyPeerKey], peerCA["tls.crt"],
		[]string{"demo-0.ns.svc"}, pki.ServerAuth|pki.ClientAuth, tlsEpoch); p != nil {
		t.Errorf("member 0's peer certificate: %s", p.Message)
	}
	if _, p := pki.Check(m0[member.KeyServerCert], m0[member.KeyServerKey], clientCA["tls.crt"],
		[]string{"demo-0.ns.svc", "demo-client.ns.svc", "localhost", "127.0.0.1"}, pki.ServerAuth, tlsEpoch); p != nil {
		t.Errorf("member 0's client-port certificate: %s", p.Message)
	}
	cert, p := pki.Check(m0[member.KeyClientCert], m0[member.KeyClientKey], clientCA["tls.crt"], nil, pki.ClientAuth, tlsEpoch)
	if p != nil || len(cert.DNSNames)+len(cert.IPAddresses) != 0 {
		t.Errorf("member 0's client certificate: %v, names %v %v; want one of the client CA without names", p, cert.DNSNames, cert.IPAddresses)
	}
	user := f.secretData("demo-client-tls")
	if _, p := pki.Check(user["tls.crt"], user["tls.key"], clientCA["tls.crt"], nil, pki.ClientAuth, tlsEpoch); p != nil {
		t.Errorf("demo-client-tls: %s", p.Message)
	}
	if st := o.tls.Status; st == nil || st.ClientSecretName != "demo-client-tls" || st.PeerCAExpiry == nil || st.ClientCAExpiry == nil || st.LeafExpiry == nil {
		t.Errorf("status.tls %+v, want the client Secret and every expiry", st)
	}

	tlsPassAt(t, f, c, tlsEpoch.Add(time.Hour))
	if w := f.secretWrites(); len(w) != 0 {
		t.Errorf("second pass wrote %v, want nothing while the certificates are good", w)
	}

	tlsPassAt(t, f, c, tlsEpoch.Add(61*24*time.Hour))
	w := strings.Join(f.secretWrites(), ",")
	if w != "update demo-client-tls,update demo-0-tls,update demo-1-tls,update demo-2-tls" {
		t.Errorf("writes at two thirds of the leaves' life: %s, want the client Secret's and the members' renewed, the CAs left", w)
	}
	renewed := f.secretData(member.TLSSecretName("demo", 0))
	if string(renewed[member.KeyPeerCert]) == string(m0[member.KeyPeerCert]) || string(renewed[member.KeyPeerCA]) != string(m0[member.KeyPeerCA]) {
		t.Error("member 0's peer certificate was not renewed, or its CA changed")
	}
}

// userCA is a user's CA valid for ten years from notBefore.
func userCA(t *testing.T, name string, notBefore time.Time) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA(name, 10*365*24*time.Hour, notBefore)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// userSecret is a Secret in cert-manager's layout, a leaf of ca for names valid from
// notBefore for life.
func userSecret(t *testing.T, name string, ca pki.KeyPair, names []string, notBefore time.Time, life time.Duration) *corev1.Secret {
	t.Helper()
	leaf, err := pki.Issue(ca, pki.Request{CommonName: "etcd", DNSNames: names, Usages: pki.ServerAuth | pki.ClientAuth, Lifetime: life}, notBefore)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": ca.CertPEM}}
}

// A Secret spec.tls names is checked before anything is copied from it: one that cannot be
// used is the cluster's problem, names the Secret and why, and no member Secret is written
// from it; members that have their certificates keep them and stay ready.
func TestTLSUserSecretChecked(t *testing.T) {
	ca := userCA(t, "user CA", tlsEpoch.Add(-200*24*time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	good := userSecret(t, "peers", ca, names, tlsEpoch.Add(-time.Hour), 90*24*time.Hour)
	c := withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil)
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   string
	}{
		{"missing", nil, "Secret peers (spec.tls.peer.secretName) does not exist"},
		{"expired", userSecret(t, "peers", ca, names, tlsEpoch.Add(-100*24*time.Hour), 90*24*time.Hour), "expired"},
		{"a member's name missing", userSecret(t, "peers", ca, names[:2], tlsEpoch.Add(-time.Hour), 90*24*time.Hour), "demo-2.ns.svc"},
		{"no key", func() *corev1.Secret { s := good.DeepCopy(); delete(s.Data, "tls.key"); return s }(), "tls.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{c}
			if tc.secret != nil {
				objs = append(objs, tc.secret)
			}
			f := newFixture(t, objs...)
			o := tlsPassAt(t, f, c, tlsEpoch)
			if p := o.tls.Problem; p == nil || p.Reason != api.ReasonTLSSecretInvalid || !strings.Contains(p.Message, "peers") || !strings.Contains(p.Message, tc.want) {
				t.Errorf("problem %+v, want TLSSecretInvalid naming Secret peers and %q", p, tc.want)
			} else if strings.Contains(p.Message, "PRIVATE KEY") {
				t.Errorf("problem message holds key material: %s", p.Message)
			}
			if w := f.secretWrites(); len(w) != 0 {
				t.Errorf("writes %v from a Secret that cannot be used", w)
			}
			if len(o.tls.Unready) != 3 {
				t.Errorf("unready %v, want every member held back", o.tls.Unready)
			}
		})
	}

	// Members that have their certificates keep them, and are ready, while the Secret is bad.
	f := newFixture(t, c, good)
	tlsPassAt(t, f, c, tlsEpoch)
	m0 := f.secretData(member.TLSSecretName("demo", 0))
	if string(m0[member.KeyPeerCert]) != string(good.Data["tls.crt"]) || string(m0[member.KeyPeerCA]) != string(ca.CertPEM) {
		t.Fatal("member 0's Secret does not hold the user's certificate and CA")
	}
	expired := userSecret(t, "peers", ca, names, tlsEpoch.Add(-100*24*time.Hour), 90*24*time.Hour)
	if _, err := f.kube.CoreV1().Secrets("ns").Update(context.Background(), expired, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := tlsPassAt(t, f, c, tlsEpoch)
	if o.tls.Problem == nil || len(o.tls.Unready) != 0 || len(f.secretWrites()) != 0 {
		t.Errorf("problem %+v, unready %v, writes %v; want the problem said and the members' copies kept", o.tls.Problem, o.tls.Unready, f.secretWrites())
	}

	// Renewed (cert-manager writes a new leaf): copied to every member.
	renewed := userSecret(t, "peers", ca, names, tlsEpoch, 90*24*time.Hour)
	if _, err := f.kube.CoreV1().Secrets("ns").Update(context.Background(), renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o = tlsPassAt(t, f, c, tlsEpoch.Add(time.Minute))
	if o.tls.Problem != nil || len(f.secretWrites()) != 3 {
		t.Errorf("problem %+v, writes %v; want the renewed certificate copied to the three members", o.tls.Problem, f.secretWrites())
	}
	if got := f.secretData(member.TLSSecretName("demo", 2))[member.KeyPeerCert]; string(got) != string(renewed.Data["tls.crt"]) {
		t.Error("member 2's Secret does not hold the renewed certificate")
	}

	// Near its end and not renewed: reported, nothing held back.
	late := userSecret(t, "peers", ca, names, tlsEpoch.Add(-80*24*time.Hour), 90*24*time.Hour)
	if _, err := f.kube.CoreV1().Secrets("ns").Update(context.Background(), late, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o = tlsPassAt(t, f, c, tlsEpoch)
	if o.tls.Problem != nil || !strings.Contains(o.tls.Expiring, "Secret peers") || len(o.tls.Unready) != 0 {
		t.Errorf("problem %+v, expiring %q, unready %v; want only the expiry reported", o.tls.Problem, o.tls.Expiring, o.tls.Unready)
	}
}

// A Secret with the name of one of the cluster's CAs that is not the cluster's is never used
// nor replaced: members trust whatever CA it holds.
func TestTLSForeignCASecret(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-peer-ca", Namespace: "ns"}, Data: map[string][]byte{"tls.crt": []byte("x")}}
	f := newFixture(t, c, other)
	o := tlsPassAt(t, f, c, tlsEpoch)
	if p := o.tls.Problem; p == nil || !strings.Contains(p.Message, "demo-peer-ca") || !strings.Contains(p.Message, "not this cluster's") {
		t.Errorf("problem %+v, want the foreign Secret named", p)
	}
	if w := f.secretWrites(); len(w) != 0 {
		t.Errorf("writes %v next to a foreign CA Secret", w)
	}
}

// A user's Secret whose CA changes starts a rotation: the members' Secrets trust the old and
// the new CA together, and keep the old CA's leaf (a member added meanwhile gets it too),
// since the running members do not trust the new CA yet; their pods, made before any pod
// recorded what it trusts, are out of date, to be restarted onto the bundle.
func TestTLSUserCAChangeStartsRotation(t *testing.T) {
	ca := userCA(t, "user CA", tlsEpoch.Add(-time.Hour))
	next := userCA(t, "next CA", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc", "demo-3.ns.svc"}
	c := withTLS(newCluster(3), &api.TLSSource{SecretName: "peers"}, nil)
	first := userSecret(t, "peers", ca, names, tlsEpoch, 90*24*time.Hour)
	f := newFixture(t, c, first)
	tlsPassAt(t, f, c, tlsEpoch)

	moved := userSecret(t, "peers", next, names, tlsEpoch, 90*24*time.Hour)
	if _, err := f.kube.CoreV1().Secrets("ns").Update(context.Background(), moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	grown := withTLS(newCluster(4), &api.TLSSource{SecretName: "peers"}, nil)
	f.kube.ClearActions()
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Minute) }
	o := &observation{cluster: grown, pods: map[int]*corev1.Pod{}}
	for ord := 0; ord < 3; ord++ {
		o.pods[ord] = member.Pod(grown, member.Template{Ordinal: ord, ClusterState: "existing", InitialCluster: []int{0, 1, 2}}, testInitImage)
		o.pods[ord].Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.0.%d", ord+1)}
		o.members = append(o.members, etcdutil.Member{ID: uint64(ord + 1), Name: member.Name("demo", ord)})
	}
	o.membersKnown = true
	// What the members' ports would answer cannot change this step: they are not asked.
	probes := 0
	f.with(func(d *Deps) {
		d.ProbeTLS = func(context.Context, string, tls.Certificate, *x509.CertPool, string) ([]*x509.Certificate, error) {
			probes++
			return nil, errors.New("no member answers in this test")
		}
	})
	f.r.now = func() time.Time { return tlsEpoch.Add(time.Minute) }
	if err := f.r.ensureTLS(context.Background(), grown, o); err != nil {
		t.Fatal(err)
	}
	if probes != 0 {
		t.Errorf("%d probes of members whose pods must be restarted first", probes)
	}
	if p := o.tls.Problem; p != nil {
		t.Errorf("problem %+v, want a rotation", p)
	}
	if got := o.tls.Status.PeerCARotation; got != api.CARotationTrustingBoth {
		t.Errorf("status.tls.peerCARotation %q, want TrustingBoth", got)
	}
	bundle := pki.Fingerprints(pki.Bundle(ca.CertPEM, next.CertPEM))
	for ord := 0; ord < 4; ord++ {
		data := f.secretData(member.TLSSecretName("demo", ord))
		if got := pki.Fingerprints(data[member.KeyPeerCA]); !slices.Equal(got, bundle) {
			t.Errorf("member %d trusts %v, want the old and the new CA %v", ord, got, bundle)
		}
		if string(data[member.KeyPeerCert]) != string(first.Data["tls.crt"]) {
			t.Errorf("member %d's Secret does not hold the old CA's leaf", ord)
		}
	}
	if len(o.tls.Unready) != 0 {
		t.Errorf("unready %v, want every member ready, the new one on the old leaf", o.tls.Unready)
	}
	for ord, p := range o.pods {
		if target := o.trustFor(ord, p, member.ClientPlain); target == "" || member.UpToDate(grown, p, member.Target{Version: grown.Spec.Version, Trust: target}, testInitImage) {
			t.Errorf("pod %d, made before pods recorded what they trust, is up to date against %q", ord, target)
		}
	}
	if ev := drainEvents(f); !strings.Contains(ev, "CARotationStarted") || !strings.Contains(ev, "Secret peers") {
		t.Errorf("events %q, want the rotation's start", ev)
	}
}

// The operator's CA Secret deleted while members hold its certificates: no other CA is made,
// which the running members would not trust; the cluster says so.
func TestTLSCADeletedIsNotRemade(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	f := newFixture(t, c)
	tlsPassAt(t, f, c, tlsEpoch)
	if err := f.kube.CoreV1().Secrets("ns").Delete(context.Background(), "demo-peer-ca", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	o := tlsPassAt(t, f, c, tlsEpoch.Add(time.Minute))
	if p := o.tls.Problem; p == nil || !strings.Contains(p.Message, "demo-peer-ca") || !strings.Contains(p.Message, "is gone") {
		t.Errorf("problem %+v, want the deleted CA Secret named", p)
	}
	if w := f.secretWrites(); len(w) != 0 {
		t.Errorf("writes %v after the CA Secret was deleted", w)
	}
	if len(o.tls.Unready) != 0 {
		t.Errorf("unready %v, want the members that have their certificates ready", o.tls.Unready)
	}
}

// A problem with one port's certificates holds back neither the renewal of the other port's
// nor that of the operator's client certificates, and never reaches <name>-client-tls's CA:
// a user's client Secret gone, or without its key, leaves the peer leaves and the client
// certificates renewed, and the CA that verifies the members as it was.
func TestTLSProblemOnOnePortRenewsTheRest(t *testing.T) {
	ca := userCA(t, "user CA", tlsEpoch.Add(-time.Hour))
	names := []string{"demo-client.ns.svc", "demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
	c := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{SecretName: "clients"})
	for _, tc := range []struct {
		name    string
		breakIt func(f *fixture)
	}{
		{"user Secret deleted", func(f *fixture) {
			if err := f.kube.CoreV1().Secrets("ns").Delete(context.Background(), "clients", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"user Secret without its key", func(f *fixture) {
			broken := userSecret(t, "clients", ca, names, tlsEpoch, 900*24*time.Hour)
			delete(broken.Data, "tls.key")
			if _, err := f.kube.CoreV1().Secrets("ns").Update(context.Background(), broken, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c, userSecret(t, "clients", ca, names, tlsEpoch, 900*24*time.Hour))
			tlsPassAt(t, f, c, tlsEpoch)
			before, clientTLS := f.secretData("demo-0-tls"), f.secretData("demo-client-tls")
			tc.breakIt(f)
			o := tlsPassAt(t, f, c, tlsEpoch.Add(61*24*time.Hour))
			if o.tls.Problem == nil {
				t.Error("no problem reported")
			}
			after, clientAfter := f.secretData("demo-0-tls"), f.secretData("demo-client-tls")
			if string(after[member.KeyPeerCert]) == string(before[member.KeyPeerCert]) {
				t.Error("the operator's peer leaf was not renewed")
			}
			if string(after[member.KeyClientCert]) == string(before[member.KeyClientCert]) {
				t.Error("the member's client certificate was not renewed")
			}
			for _, k := range []string{member.KeyServerCert, member.KeyServerCA, member.KeyClientCA} {
				if string(after[k]) != string(before[k]) {
					t.Errorf("%s of the member's Secret changed", k)
				}
			}
			if string(clientAfter["ca.crt"]) != string(clientTLS["ca.crt"]) {
				t.Error("demo-client-tls's ca.crt changed: its holders would stop trusting the members")
			}
			if string(clientAfter["tls.crt"]) == string(clientTLS["tls.crt"]) {
				t.Error("demo-client-tls's certificate was not renewed")
			}
			if len(o.tls.Unready) != 0 {
				t.Errorf("unready %v, want the members that have their certificates ready", o.tls.Unready)
			}
		})
	}
}

// With member pods running, a new CA is never made, even when every Secret that held the
// old one's certificates is gone: the running etcds trust the CA they started with.
func TestTLSNoNewCAUnderRunningMembers(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, nil)
	f := newFixture(t, c)
	f.kube.ClearActions()
	f.r.now = func() time.Time { return tlsEpoch }
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{0: {}, 1: {}, 2: {}}}
	if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
		t.Fatal(err)
	}
	if p := o.tls.Problem; p == nil || !strings.Contains(p.Message, "running member pods") {
		t.Errorf("problem %+v, want the running members named", p)
	}
	if w := f.secretWrites(); len(w) != 0 {
		t.Errorf("writes %v under running members", w)
	}
}

// Claims that hold members made with TLS peer URLs are not started in a cluster that asks for
// plaintext peers: etcd keeps its peer URLs in its data, and the operator does not move peers
// off TLS. Claims made with plaintext peer URLs (made before TLS, or with spec.tls: {}) in a
// cluster that asks for peer TLS are started as they were, and their peers then moved onto
// TLS (TestPeerMoveEveryPodDeletedBeforeTheHopIsRecorded). Claims of the same scheme, and
// claims without a member yet, are started as usual.
func TestTLSClaimsOfTheOtherPeerScheme(t *testing.T) {
	claim := func(ord int, scheme string, marked bool) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: member.ClaimName("demo", ord), Annotations: map[string]string{}}}
		if scheme != "" {
			pvc.Annotations[member.AnnotationPeerScheme] = scheme
		}
		if marked {
			pvc.Annotations[member.AnnotationMemberID] = "1"
		}
		return pvc
	}
	tlsOn := withTLS(newCluster(3), &api.TLSSource{}, nil)
	plain := withTLS(newCluster(3), nil, nil)
	for _, tc := range []struct {
		name    string
		c       *api.EtcdCluster
		claims  map[int]*corev1.PersistentVolumeClaim
		unready []int
	}{
		{"claims from before TLS, peer TLS asked", tlsOn, map[int]*corev1.PersistentVolumeClaim{0: claim(0, "", true), 1: claim(1, "", true), 2: claim(2, "", false)}, nil},
		{"https claims, plaintext asked", plain, map[int]*corev1.PersistentVolumeClaim{0: claim(0, "https", true)}, []int{0}},
		{"https claims, peer TLS asked", tlsOn, map[int]*corev1.PersistentVolumeClaim{0: claim(0, "https", true)}, nil},
		{"claims from before TLS, plaintext asked", plain, map[int]*corev1.PersistentVolumeClaim{0: claim(0, "", true)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &observation{cluster: tc.c, claims: tc.claims, pods: map[int]*corev1.Pod{}}
			o.observePeers() // as a pass does first: where the pods are made
			checkPeerSchemes(tc.c, o)
			if !slices.Equal(o.tls.Unready, tc.unready) {
				t.Errorf("unready %v, want %v", o.tls.Unready, tc.unready)
			}
			if (o.tls.Problem != nil) != (len(tc.unready) > 0) {
				t.Errorf("problem %+v, want one only with members held back", o.tls.Problem)
			} else if o.tls.Problem != nil && (o.tls.Problem.Reason != api.ReasonInvalidSpec || !strings.Contains(o.tls.Problem.Message, "data-demo-0")) {
				t.Errorf("problem %+v, want InvalidSpec naming the claims", o.tls.Problem)
			}
		})
	}
}

// Without its client certificate the operator cannot ask a client-TLS cluster's members
// anything: a pass changes nothing then (a seed pod that failed is not taken for one that
// never served), and says why.
func TestTLSBlindPassChangesNothing(t *testing.T) {
	c := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	headless := &discoveryv1.EndpointSlice{}
	created := time.Now().Add(-time.Hour)
	seed := memberPod(c, 0, "10.0.0.1", corev1.PodFailed, created, headless)
	joiner := memberPod(c, 1, "10.0.0.2", corev1.PodRunning, created, headless)
	f := newFixture(t, c, seed, joiner)
	syncOnce(t, f)
	for _, verb := range []string{"create", "delete"} {
		if n := len(f.actions(verb, "pods")); n != 0 {
			t.Errorf("%d pods %sd on a pass that asked the members nothing", n, verb)
		}
	}
	got, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := meta.FindStatusCondition(got.Status.Conditions, string(api.ConditionDegraded)); d == nil ||
		d.Reason != string(api.ReasonTLSSecretInvalid) || !strings.Contains(d.Message, "demo-client-tls") {
		t.Errorf("Degraded %+v, want TLSSecretInvalid naming demo-client-tls", d)
	}
}
