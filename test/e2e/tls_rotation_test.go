//go:build e2e

package e2e

import (
	"crypto/x509"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// caRotationBound is how long TestTLSCARotation's rotation may take: two rollouts of three
// members each, the kubelet's refresh of the members' Secret volumes between them, and the
// time the client port's old CA is kept for the pods that mount the client Secret.
const caRotationBound = 20 * time.Minute

// caOf is the CA (tls.crt) the operator keeps in Secret name.
func caOf(t *testing.T, f *framework.Framework, name string) *x509.Certificate {
	t.Helper()
	c, err := f.SecretCertificate(name, framework.SecretCert)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rotationSteps waits until neither port of cluster rotates any more and the cluster is in
// spec, and returns the steps status.tls said each port went through, in order.
func rotationSteps(t *testing.T, f *framework.Framework, cluster string, size int) map[string][]string {
	t.Helper()
	steps := map[string][]string{}
	note := func(port, phase string) {
		if n := len(steps[port]); phase != "" && (n == 0 || steps[port][n-1] != phase) {
			steps[port] = append(steps[port], phase)
		}
	}
	if err := f.WatchEtcdCluster(cluster, caRotationBound, func(c *framework.EtcdCluster) (bool, error) {
		st := c.Status.TLS
		if st == nil {
			return false, nil
		}
		note("peer", st.PeerCARotation)
		note("client", st.ClientCARotation)
		if len(steps) < 2 || st.PeerCARotation != "" || st.ClientCARotation != "" || c.Condition("Progressing") != "False" {
			return false, fmt.Errorf("steps so far %v; Progressing %s", steps, c.Condition("Progressing"))
		}
		return c.InSpec(size)
	}); err != nil {
		t.Fatalf("the CA rotation of %s: %v", cluster, err)
	}
	return steps
}

// TestTLSCARotation: the operator's peer and client CAs of a running three-member cluster are
// rotated on request (the rotate-ca annotation) while the writer writes with the client
// certificate the operator keeps: status.tls goes through the three steps for each port; every
// member is restarted on its own data (same member IDs), the CA Secrets end with new CAs, the
// members trust and serve the new ones alone; a client certificate of the old client CA is
// refused, the renewed one accepted; no acknowledged write is lost.
func TestTLSCARotation(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "carotate"
	f.Apply(clusterManifest(name, "  size: 3\n  tls: {peer: {}, client: {}}\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)
	ids, uids := memberIDs(f, name), podUIDs(f, name)
	oldPeer, oldClient := caOf(t, f, name+"-peer-ca"), caOf(t, f, name+"-client-ca")
	before, err := f.SecretData(framework.ClientSecretName(name))
	if err != nil {
		t.Fatal(err)
	}
	writer := f.StartWriter(name)
	writer.WaitAcked(5, time.Minute)

	f.MustNS("annotate", "etcdcluster/"+name, "etcd.operator.dev/rotate-ca=e2e", "--overwrite")
	steps := rotationSteps(t, f, name, 3)
	want := []string{"TrustingBoth", "Reissuing", "DroppingOld"}
	for _, port := range []string{"peer", "client"} {
		if !slices.Equal(steps[port], want) {
			t.Errorf("status.tls said the %s CA went through %v, want %v", port, steps[port], want)
		}
	}
	writer.WaitAcked(5, time.Minute)
	log := writer.StopAndVerify(name + "-0")
	t.Logf("the writer failed %d puts in all, at most %d in a row, while members restarted", log.Failed, log.MostConsecutiveFailures())
	if got := memberIDs(f, name); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("member IDs %v after the rotation, want %v: each member restarts on its data", got, ids)
	}
	for pod, uid := range podUIDs(f, name) {
		if uids[pod] == uid {
			t.Errorf("pod %s was not restarted by the rotation", pod)
		}
	}
	checkRotated(t, f, name, oldPeer, oldClient)
	checkOldClientRefused(t, f, name, before)
}

// checkRotated checks that the CA Secrets hold new CAs alone, that every member's Secret
// trusts only them, and that every member serves leaves of them.
func checkRotated(t *testing.T, f *framework.Framework, name string, oldPeer, oldClient *x509.Certificate) {
	t.Helper()
	newPeer, newClient := caOf(t, f, name+"-peer-ca"), caOf(t, f, name+"-client-ca")
	if serial(newPeer) == serial(oldPeer) || serial(newClient) == serial(oldClient) {
		t.Fatalf("the CA Secrets hold the CAs they held before the rotation")
	}
	for _, ca := range []string{name + "-peer-ca", name + "-client-ca"} {
		if data, err := f.SecretData(ca); err != nil || len(data["next.crt"]) > 0 {
			t.Errorf("Secret %s keeps a second CA after the rotation (%v)", ca, err)
		}
	}
	peers, servers := map[string]*framework.Forward{}, map[string]*framework.Forward{}
	for i := 0; i < 3; i++ {
		s := memberTLSSecret(name, i)
		data, err := f.SecretData(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := pki.Fingerprints(data[keyPeerCA]); !slices.Equal(got, []string{pki.Fingerprint(newPeer)}) {
			t.Errorf("Secret %s trusts peers of %v, want the new peer CA alone", s, got)
		}
		peers[s], servers[s] = f.PortForward(fmt.Sprintf("%s-%d", name, i), 2380), f.PortForward(fmt.Sprintf("%s-%d", name, i), 2379)
	}
	signedBy := func(ca *x509.Certificate) func(string, *x509.Certificate) error {
		return func(_ string, c *x509.Certificate) error {
			if c.CheckSignatureFrom(ca) != nil {
				return fmt.Errorf("serves %s, not a leaf of %s", serial(c), ca.Subject.CommonName)
			}
			return nil
		}
	}
	waitServed(f, "the new peer CA's leaves served", peers, signedBy(newPeer))
	waitServed(f, "the new client CA's leaves served", servers, signedBy(newClient))
}

// checkOldClientRefused checks that the client port refuses the client certificate the
// client Secret held before the rotation (its CA is dropped), and accepts the one it holds
// now.
func checkOldClientRefused(t *testing.T, f *framework.Framework, name string, before map[string][]byte) {
	t.Helper()
	f.ApplySecret(name+"-before", before)
	current := framework.ClientSecretName(name)
	f.StartEtcdctlPod(name+"-rotated", current, name+"-before")
	get := func(secret string) (string, error) {
		return f.EtcdctlIn(name+"-rotated", "--endpoints=https://"+f.ClientServiceHost(name)+":2379",
			"--cacert="+framework.SecretFile(current, framework.SecretCA), "--cert="+framework.SecretFile(secret, framework.SecretCert),
			"--key="+framework.SecretFile(secret, framework.SecretKey), "--dial-timeout=3s", "--command-timeout=3s", "get", "nothing")
	}
	if out, err := get(current); err != nil {
		t.Errorf("the renewed client certificate is refused: %q %v", out, err)
	}
	if out, err := get(name + "-before"); err == nil {
		t.Errorf("a client certificate of the old client CA is accepted after the rotation: %q", out)
	}
}
