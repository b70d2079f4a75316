//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The TLS tests (docs/tls.md). Certificates the operator issues, and ones a user brings in
// Secrets of cert-manager's layout, made here with the operator's own pkg/pki. Private keys
// read from Secrets stay in the test's memory: no log line, command line or failure message
// carries one.

// memberTLSSecret is the operator's Secret of a member's certificates, which its pod mounts.
func memberTLSSecret(cluster string, ordinal int) string {
	return fmt.Sprintf("%s-%d-tls", cluster, ordinal)
}

// The keys of a member's Secret that the tests read.
const (
	keyPeerCert   = "peer.crt"
	keyPeerKey    = "peer.key"
	keyPeerCA     = "peer-ca.crt"
	keyServerCert = "server.crt"
	keyClientCert = "client.crt"
)

// restartCounts are the restart counts of the etcd containers of a cluster's member pods.
func restartCounts(f *framework.Framework, cluster string) map[string]string {
	return fieldByName(f, "pods", cluster, `.status.containerStatuses[?(@.name=="etcd")].restartCount`)
}

// checkNoRestart fails the test when a member pod of cluster was replaced (its UID differs
// from uids) or its etcd container restarted (restarts).
func checkNoRestart(t *testing.T, f *framework.Framework, cluster string, uids, restarts map[string]string) {
	t.Helper()
	if now := podUIDs(f, cluster); fmt.Sprint(now) != fmt.Sprint(uids) {
		t.Errorf("member pods replaced: UIDs %v, were %v", now, uids)
	}
	if now := restartCounts(f, cluster); fmt.Sprint(now) != fmt.Sprint(restarts) {
		t.Errorf("etcd containers restarted: restart counts %v, were %v", now, restarts)
	}
}

// serial is a certificate's serial number, for comparisons and messages.
func serial(c *x509.Certificate) string { return c.SerialNumber.Text(16) }

// peerGet asks a member's peer port, forwarded to, for /version with cfg (nil: plaintext
// HTTP), and says whether it answered.
func peerGet(fw *framework.Forward, cfg *tls.Config) error {
	addr, err := fw.Addr()
	if err != nil {
		return err
	}
	scheme := "http"
	if cfg != nil {
		scheme = "https"
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	resp, err := client.Get(scheme + "://" + addr + "/version")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "etcdserver") {
		return fmt.Errorf("%s: %q", resp.Status, body)
	}
	return nil
}

// TestTLSCluster: a cluster with peer and client TLS from the operator's own CAs. Its members
// talk https to each other; status names the client Secret and the expiries; a client with
// the operator's client certificate reaches it through the client Service, the server
// verified by the Service's name, and every other way in is refused: no client certificate,
// one of another CA, plaintext, a name the server's certificate does not carry, and the peer
// port without a member's certificate. Then, under the writer: scaled 3 -> 4 -> 3 (a member
// added with certificates of its own) and a member restarted in place on its claim.
func TestTLSCluster(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "secure"
	f.Apply(clusterManifest(name, "  size: 3\n  tls: {peer: {}, client: {}}\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)

	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Status.TLS; st == nil || st.ClientSecretName != framework.ClientSecretName(name) ||
		st.PeerCAExpiry == nil || st.ClientCAExpiry == nil || st.LeafExpiry == nil || !st.LeafExpiry.After(time.Now()) {
		t.Errorf("status.tls %+v: want clientSecretName %s and the CAs' and leaves' expiries", st, framework.ClientSecretName(name))
	}
	members, err := f.MemberList(name + "-0")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		for _, u := range append(append([]string(nil), m.PeerURLs...), m.ClientURLs...) {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s has URL %s, want https only", m.Name, u)
			}
		}
	}

	// A client in the cluster, with the operator's client certificate, and with one of
	// another CA.
	other := framework.NewTestCA(t, "e2e another CA")
	f.ApplySecret("stranger", framework.TLSSecretData(other,
		framework.IssueCert(t, other, framework.Cert{CommonName: "stranger", Usages: pki.ClientAuth})))
	client := framework.ClientSecretName(name)
	f.StartEtcdctlPod("probe", client, "stranger")
	svc := "--endpoints=https://" + f.ClientServiceHost(name) + ":2379"
	ca := "--cacert=" + framework.SecretFile(client, framework.SecretCA)
	cert, key := "--cert="+framework.SecretFile(client, framework.SecretCert), "--key="+framework.SecretFile(client, framework.SecretKey)
	etcdctl := func(args ...string) (string, error) {
		return f.EtcdctlIn("probe", append([]string{"--dial-timeout=3s", "--command-timeout=3s"}, args...)...)
	}
	if out, err := etcdctl(svc, ca, cert, key, "put", "tls-check", "ok"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("put through %s-client with the client certificate: %q %v", name, out, err)
	}
	if out, err := etcdctl(svc, ca, cert, key, "get", "tls-check", "--print-value-only"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("get through %s-client with the client certificate: %q %v", name, out, err)
	}
	podIP := strings.TrimSpace(f.MustNS("get", "pod", name+"-0", "-o", "jsonpath={.status.podIP}"))
	for _, tc := range []struct {
		desc string
		args []string
	}{
		{"no client certificate", []string{svc, ca}},
		{"a client certificate of another CA", []string{svc, ca,
			"--cert=" + framework.SecretFile("stranger", framework.SecretCert), "--key=" + framework.SecretFile("stranger", framework.SecretKey)}},
		{"plaintext", []string{"--endpoints=http://" + f.ClientServiceHost(name) + ":2379"}},
		// The same certificates that work through the Service's name: the server's certificate
		// is checked against the name dialled.
		{"the member's pod IP, which its certificate does not name", []string{
			"--endpoints=https://" + net.JoinHostPort(podIP, "2379"), ca, cert, key}},
	} {
		if out, err := etcdctl(append(tc.args, "get", "tls-check")...); err == nil {
			t.Errorf("%s: the client port answered: %q", tc.desc, out)
		}
	}

	// The peer port, reached directly: it answers a member's certificate only.
	data, err := f.SecretData(memberTLSSecret(name, 0))
	if err != nil {
		t.Fatal(err)
	}
	peerCA := x509.NewCertPool()
	if !peerCA.AppendCertsFromPEM(data[keyPeerCA]) {
		t.Fatalf("secret %s has no %s", memberTLSSecret(name, 0), keyPeerCA)
	}
	pair, err := tls.X509KeyPair(data[keyPeerCert], data[keyPeerKey])
	if err != nil {
		t.Fatalf("secret %s: the peer key pair does not load", memberTLSSecret(name, 0))
	}
	peer := f.PortForward(name+"-0", 2380)
	verified := &tls.Config{RootCAs: peerCA, ServerName: f.MemberHost(name, 0)}
	withCert := verified.Clone()
	withCert.Certificates = []tls.Certificate{pair}
	// A member's own certificate is let in (what the refusals are measured against): before
	// them, through the same forward, and after them, once kubectl, which exits after a
	// connection the member reset, has been started again.
	accepted := func(when string) {
		t.Helper()
		f.Eventually("the peer port accepting a member's own certificate "+when, 30*time.Second, func() (bool, error) {
			err := peerGet(peer, withCert)
			return err == nil, err
		})
	}
	accepted("before the refusals")
	if err := peerGet(peer, nil); err == nil {
		t.Error("the peer port answered plaintext HTTP")
	}
	accepted("after plaintext")
	if err := peerGet(peer, verified); err == nil {
		t.Error("the peer port answered a TLS client without a certificate")
	}
	accepted("after a client without a certificate")

	// Membership and pod changes under the writer, which writes with the client certificate.
	writer := f.StartWriter(name)
	for _, size := range []int{4, 3} {
		f.Scale("etcdcluster/"+name, size)
		f.WaitClusterInSpec(name, size, 3*time.Minute)
		f.CheckAgreement(name, size)
		writer.WaitAcked(5, time.Minute)
	}
	pod := name + "-1"
	before, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	oldID, oldUID := before.MemberID(pod), podUID(f, pod)
	f.Delete("pod/" + pod)
	waitRestarted(f, name, pod, oldID, oldUID, 3)
	writer.WaitAcked(5, time.Minute)
	acked := writer.StopAndVerify(name + "-0")

	// A backup of it, through its client certificate, and a new TLS cluster restored from
	// the backup with every acknowledged write.
	f.Apply(strings.ReplaceAll(exampleFile(t, "etcdbackup-volume.yaml"), "example", name))
	b := waitBackup(f, name+"-backup", 5*time.Minute)
	if b.Status.Phase != "Succeeded" || b.Status.Revision == 0 {
		t.Fatalf("backup of a client-TLS cluster: status %+v", b.Status)
	}
	f.Apply(clusterManifest("secure-restored", "  size: 1\n  storage: {emptyDir: {}}\n  tls: {peer: {}, client: {}}\n"+
		"  bootstrap: {fromBackup: {backupName: "+name+"-backup}}\n"))
	f.WaitClusterInSpec("secure-restored", 1, 4*time.Minute)
	writer.VerifyIn("secure-restored", acked, "secure-restored-0")
}
