package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A move of the client port goes through ClientDual for every pod before any pod serves the
// spec's mode alone, and the operator dials what every pod serves at each step: plaintext
// while a pod serves plaintext alone, TLS once none does.
func TestClientModeSteps(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	off := withTLS(newCluster(3), &api.TLSSource{}, nil)
	const (
		plain, dual, secure = member.ClientPlain, member.ClientDual, member.ClientSecure
	)
	for _, tc := range []struct {
		name    string
		c       *api.EtcdCluster
		pods    []member.ClientMode
		target  member.ClientMode
		dial    bool
		certsOn bool
	}{
		{"new cluster with client TLS", on, nil, secure, true, true},
		{"new cluster without", off, nil, plain, false, false},
		{"on: every pod plaintext", on, []member.ClientMode{plain, plain, plain}, dual, false, true},
		{"on: one pod rolled", on, []member.ClientMode{dual, plain, plain}, dual, false, true},
		{"on: every pod serves both", on, []member.ClientMode{dual, dual, dual}, secure, true, true},
		{"on: one pod serves TLS alone", on, []member.ClientMode{secure, dual, dual}, secure, true, true},
		{"on: done", on, []member.ClientMode{secure, secure, secure}, secure, true, true},
		{"off: every pod TLS", off, []member.ClientMode{secure, secure, secure}, dual, true, true},
		{"off: one pod rolled", off, []member.ClientMode{dual, secure, secure}, dual, true, true},
		{"off: every pod serves both", off, []member.ClientMode{dual, dual, dual}, plain, true, true},
		{"off: one pod plaintext alone", off, []member.ClientMode{plain, dual, dual}, plain, false, true},
		{"off: done", off, []member.ClientMode{plain, plain, plain}, plain, false, false},
		{"turned back on halfway off", on, []member.ClientMode{plain, dual, dual}, dual, false, true},
		{"turned back off halfway on", off, []member.ClientMode{secure, dual, dual}, dual, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[int]*corev1.Pod{}
			for ord, m := range tc.pods {
				pods[ord] = member.Pod(tc.c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting,
					InitialCluster: []int{0, 1, 2}, Client: m}, testInitImage)
			}
			modes := clientModes(tc.c, pods)
			if got := clientTarget(tc.c, pods); got != tc.target {
				t.Errorf("target %q, want %q", got, tc.target)
			}
			if got := dialTLS(tc.c, modes); got != tc.dial {
				t.Errorf("dial TLS %v, want %v", got, tc.dial)
			}
			if got := clientTLSInUse(tc.c, modes); got != tc.certsOn {
				t.Errorf("client certificates in use %v, want %v", got, tc.certsOn)
			}
		})
	}
}

// podsServing are member pods 0..2 of c serving the client port as mode.
func podsServing(c *api.EtcdCluster, mode member.ClientMode) map[int]*corev1.Pod {
	pods := map[int]*corev1.Pod{}
	for ord := range 3 {
		pods[ord] = member.Pod(c, member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting,
			InitialCluster: []int{0, 1, 2}, Client: mode}, testInitImage)
	}
	return pods
}

// spec.tls.client added to a cluster whose members run with a plaintext client port: the
// client CA is made (no running etcd trusts another), and every member's Secret gets the
// client port's certificates before any pod is rolled to mount them.
func TestClientTLSAddedToRunningCluster(t *testing.T) {
	peerOnly := withTLS(newCluster(3), &api.TLSSource{}, nil)
	f := newFixture(t, peerOnly)
	tlsPassAt(t, f, peerOnly, tlsEpoch)

	c := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	f.kube.ClearActions()
	o := &observation{cluster: c, pods: podsServing(peerOnly, member.ClientPlain)}
	if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
		t.Fatal(err)
	}
	if o.tls.Problem != nil || len(o.tls.Unready) != 0 {
		t.Fatalf("problem %+v, unready %v; want the client port's certificates issued", o.tls.Problem, o.tls.Unready)
	}
	f.secretData(member.ClientCASecretName(c.Name))
	f.secretData(member.ClientTLSSecretName(c.Name))
	for ord := range 3 {
		data := f.secretData(member.TLSSecretName(c.Name, ord))
		for _, k := range member.TLSKeys(c, true) {
			if len(data[k]) == 0 {
				t.Errorf("member %d's Secret lacks %s", ord, k)
			}
		}
	}
}

// Members that serve client TLS (both ways, or TLS alone) trust the client CA they started
// with: with its Secret gone, no other is made, whether the spec still asks for client TLS or
// the port is moving off it.
func TestClientCANotRemadeUnderTLSMembers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client *api.TLSSource
		mode   member.ClientMode
	}{
		{"moving on, pods serve both", &api.TLSSource{}, member.ClientDual},
		{"client TLS, pods serve it", &api.TLSSource{}, member.ClientSecure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := withTLS(newCluster(3), &api.TLSSource{}, tc.client)
			f := newFixture(t, c)
			f.kube.ClearActions()
			f.r.now = func() time.Time { return tlsEpoch }
			o := &observation{cluster: c, pods: podsServing(c, tc.mode)}
			if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
				t.Fatal(err)
			}
			if p := o.tls.Problem; p == nil || !strings.Contains(p.Message, "running member pods") {
				t.Errorf("problem %+v, want the running members named", p)
			}
			for _, w := range f.secretWrites() {
				if strings.Contains(w, "client-ca") {
					t.Errorf("wrote %s under members that trust the old client CA", w)
				}
			}
		})
	}
}

// spec.tls.client removed: while member pods still serve TLS, their Secrets keep the client
// port's certificates (a pod rolled meanwhile mounts them), and the members count as ready.
func TestClientTLSRemovedKeepsMemberCertificates(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)
	before := f.secretData(member.TLSSecretName(on.Name, 1))

	off := withTLS(newCluster(3), &api.TLSSource{}, nil)
	f.kube.ClearActions()
	o := &observation{cluster: off, pods: podsServing(on, member.ClientSecure)}
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	if o.tls.Problem != nil || len(o.tls.Unready) != 0 {
		t.Errorf("problem %+v, unready %v; want the members ready on the certificates they have", o.tls.Problem, o.tls.Unready)
	}
	after := f.secretData(member.TLSSecretName(on.Name, 1))
	for _, k := range member.TLSKeys(on, true) {
		if string(after[k]) != string(before[k]) {
			t.Errorf("%s of member 1's Secret changed while the port moves off TLS", k)
		}
	}
}

// spec.tls.client added with a Secret that cannot be used, to a cluster whose members' Secrets
// still hold client-port certificates from an earlier move off TLS: the move is held. Members
// keep the mode they serve (no pod is out of date for it), pods made meanwhile serve
// plaintext, as the members still do, and need no client certificates, so a member whose pod
// is lost comes back; status says which Secret and why.
func TestClientMoveHeldForItsSecret(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)

	c := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{SecretName: "missing"})
	pods := podsServing(withTLS(newCluster(3), &api.TLSSource{}, nil), member.ClientPlain)
	pods[0] = podsServing(c, member.ClientDual)[0]
	delete(pods, 1) // lost with its node
	f.kube.ClearActions()
	o := &observation{cluster: c, pods: pods, clientTarget: clientTarget(c, pods)}
	if err := f.r.ensureTLS(context.Background(), c, o); err != nil {
		t.Fatal(err)
	}
	if p := o.tls.Problem; p == nil || !strings.Contains(p.Message, "missing") {
		t.Errorf("problem %+v, want the missing Secret named", p)
	}
	if !o.clientHeld || o.clientTarget != member.ClientPlain {
		t.Errorf("held %v, pods made as %q; want the move held and new pods in plaintext", o.clientHeld, o.clientTarget)
	}
	if len(o.tls.Unready) != 0 {
		t.Errorf("unready %v: member 1's pod, made in plaintext, needs no client certificates", o.tls.Unready)
	}
	for _, ord := range []int{0, 2} {
		if !member.UpToDate(c, pods[ord], member.Target{Version: c.Spec.Version, Client: o.clientFor(pods[ord])}, testInitImage) {
			t.Errorf("pod %d is out of date while the move is held: it would be rolled", ord)
		}
	}
}

// A member whose pod is gone while the others serve both (the last one rolled in the first
// step) comes back in the spec's mode: the second step deletes pods too, so making it serve
// both first would roll members for ever. Plaintext-only and TLS-only pods never run side by
// side either way.
func TestClientMoveLastMemberGoesStraightToTheSpec(t *testing.T) {
	for _, c := range []*api.EtcdCluster{
		withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{}),
		withTLS(newCluster(3), &api.TLSSource{}, nil),
	} {
		pods := podsServing(c, member.ClientDual)
		delete(pods, 2)
		if got := clientTarget(c, pods); got != member.SpecClientMode(c) {
			t.Errorf("spec client TLS %v: member 2 made as %q, want the spec's mode", member.ClientTLS(c), got)
		}
	}
}

// Moving off client TLS, the client port's certificates are kept and renewed from the
// operator's CA while member pods serve it: the operator's own (it dials them with it), the
// members', and those of a member added meanwhile, which is not held back.
func TestClientMoveOffKeepsRenewing(t *testing.T) {
	on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
	f := newFixture(t, on)
	tlsPassAt(t, f, on, tlsEpoch)
	before := f.secretData(member.ClientTLSSecretName(on.Name))
	ca := f.secretData(member.ClientCASecretName(on.Name))

	off := withTLS(newCluster(4), &api.TLSSource{}, nil)
	late := tlsEpoch.Add(80 * 24 * time.Hour) // past two thirds of the default leaf lifetime
	f.r.now = func() time.Time { return late }
	pods := podsServing(on, member.ClientDual)
	o := &observation{cluster: off, pods: pods, clientTarget: clientTarget(off, pods)}
	if err := f.r.ensureTLS(context.Background(), off, o); err != nil {
		t.Fatal(err)
	}
	if o.tls.Problem != nil || len(o.tls.Unready) != 0 {
		t.Fatalf("problem %+v, unready %v; want every member ready, member 3 included", o.tls.Problem, o.tls.Unready)
	}
	if after := f.secretData(member.ClientTLSSecretName(on.Name)); string(after["tls.crt"]) == string(before["tls.crt"]) {
		t.Errorf("%s not renewed while the operator dials members with it", member.ClientTLSSecretName(on.Name))
	}
	if got := f.secretData(member.ClientCASecretName(on.Name)); string(got["tls.crt"]) != string(ca["tls.crt"]) {
		t.Error("the client CA changed while members trust it")
	}
	for ord := range 4 {
		data := f.secretData(member.TLSSecretName(on.Name, ord))
		if string(data[member.KeyServerCA]) != string(ca["tls.crt"]) || len(data[member.KeyServerCert]) == 0 {
			t.Errorf("member %d's Secret lacks the client port's certificates of the cluster's CA", ord)
		}
	}
	if st := o.tls.Status; st == nil || st.LeafExpiry == nil || !st.LeafExpiry.After(late) {
		t.Errorf("status %+v: want the leaves' expiry, after the renewal", st)
	}
}

// After a move off, the client-port certificates left in the members' Secrets are trusted by
// no running etcd: a move on again makes a new client CA if the old one's Secret is gone, and
// a move on with other certificates (the operator's after a user's) takes them, rather than
// freezing the port on the old trust.
func TestClientMoveOnAgainReplacesWhatNoMemberServes(t *testing.T) {
	t.Run("CA Secret deleted", func(t *testing.T) {
		on := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
		f := newFixture(t, on)
		tlsPassAt(t, f, on, tlsEpoch)
		if err := f.kube.CoreV1().Secrets("ns").Delete(context.Background(), member.ClientCASecretName(on.Name), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
		o := &observation{cluster: on, pods: podsServing(withTLS(newCluster(3), &api.TLSSource{}, nil), member.ClientPlain)}
		if err := f.r.ensureTLS(context.Background(), on, o); err != nil {
			t.Fatal(err)
		}
		if o.tls.Problem != nil || len(o.tls.Unready) != 0 {
			t.Errorf("problem %+v, unready %v, with every pod in plaintext", o.tls.Problem, o.tls.Unready)
		}
	})
	t.Run("from a user's Secret to the operator's", func(t *testing.T) {
		ca := userCA(t, "user CA", tlsEpoch.Add(-time.Hour))
		names := []string{"demo-client.ns.svc", "demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}
		onUser := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{SecretName: "clients"})
		f := newFixture(t, onUser, userSecret(t, "clients", ca, names, tlsEpoch, 900*24*time.Hour))
		tlsPassAt(t, f, onUser, tlsEpoch)
		userCert := f.secretData("demo-0-tls")[member.KeyServerCert]

		onOp := withTLS(newCluster(3), &api.TLSSource{}, &api.TLSSource{})
		f.r.now = func() time.Time { return tlsEpoch.Add(time.Hour) }
		o := &observation{cluster: onOp, pods: podsServing(withTLS(newCluster(3), &api.TLSSource{}, nil), member.ClientPlain)}
		if err := f.r.ensureTLS(context.Background(), onOp, o); err != nil {
			t.Fatal(err)
		}
		if o.tls.Problem != nil {
			t.Errorf("problem with every pod in plaintext: %s", o.tls.Problem.Message)
		}
		if string(f.secretData("demo-0-tls")[member.KeyServerCert]) == string(userCert) {
			t.Error("member 0 keeps the user's old serving certificate")
		}
	})
}
