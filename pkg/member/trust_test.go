package member

import (
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

func trustCA(t *testing.T, name string) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA(name, 24*time.Hour, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// A pod's record of what it trusts names the CAs of each trust key it mounts, whatever their
// order in the bundle, and reads back as the same sets.
func TestTrustStamp(t *testing.T) {
	oldCA, newCA, clientCA := trustCA(t, "old"), trustCA(t, "new"), trustCA(t, "client")
	data := map[string][]byte{
		KeyPeerCA:   pki.Bundle(oldCA.CertPEM, newCA.CertPEM),
		KeyClientCA: clientCA.CertPEM,
		KeyServerCA: clientCA.CertPEM,
	}
	swapped := map[string][]byte{KeyPeerCA: pki.Bundle(newCA.CertPEM, oldCA.CertPEM), KeyClientCA: clientCA.CertPEM, KeyServerCA: clientCA.CertPEM}
	if a, b := TrustStamp(data, true, true), TrustStamp(swapped, true, true); a != b {
		t.Errorf("the order of a bundle changes the record: %q, %q", a, b)
	}
	peerOnly := ParseTrust(TrustStamp(data, true, false))
	want := []string{pki.Fingerprint(oldCA.Cert), pki.Fingerprint(newCA.Cert)}
	slices.Sort(want)
	if len(peerOnly) != 1 || !slices.Equal(peerOnly[KeyPeerCA], want) {
		t.Errorf("peer-only record %v, want %s=%v alone", peerOnly, KeyPeerCA, want)
	}
	both := ParseTrust(TrustStamp(data, true, true))
	if len(both) != 3 || !slices.Equal(both[KeyServerCA], []string{pki.Fingerprint(clientCA.Cert)}) {
		t.Errorf("record of a pod serving TLS on both ports: %v", both)
	}
	if s := TrustStamp(data, false, false); s != "" || ParseTrust(s) != nil {
		t.Errorf("a pod without TLS records %q", s)
	}
}

// A pod that trusts other CAs than its Secret holds now is out of date, and is never restarted
// in place: its new etcd would read CA files the kubelet may not have refreshed yet.
func TestUpToDateTrust(t *testing.T) {
	tmpl := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, MemberID: 0xab,
		Trust: "peer-ca.crt=00aa"}
	c := testCluster()
	built := Pod(c, tmpl, "op:1")
	if !UpToDate(c, built, Target{Version: "3.6.16", Trust: "peer-ca.crt=00aa"}, "op:1") {
		t.Error("a pod trusting what its Secret holds is out of date")
	}
	if !UpToDate(c, built, Target{Version: "3.6.16"}, "op:1") {
		t.Error("a pod is out of date when the pass does not compare trust")
	}
	if UpToDate(c, built, Target{Version: "3.6.16", Trust: "peer-ca.crt=00aa,11bb"}, "op:1") {
		t.Error("a pod that does not trust the bundle its Secret holds is up to date")
	}
	unrecorded := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, MemberID: 0xab}, "op:1")
	if UpToDate(c, unrecorded, Target{Version: "3.6.16", Trust: "peer-ca.crt=00aa"}, "op:1") {
		t.Error("a pod that recorded nothing is up to date against a record")
	}
	if _, _, ok := ImageChange(c, built, Target{Version: "3.6.17", Trust: "peer-ca.crt=00aa,11bb"}, "op:1"); ok {
		t.Error("a pod whose trust changes is restarted in place")
	}
	if _, _, ok := ImageChange(c, built, Target{Version: "3.6.17", Trust: "peer-ca.crt=00aa"}, "op:1"); !ok {
		t.Error("a version change of a pod whose trust stays is not done in place")
	}
}
