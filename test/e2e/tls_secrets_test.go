//go:build e2e

package e2e

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// userNames are the names a certificate a user brings for a cluster of size members must
// carry: every member's, as its peers and clients dial it, and the client Service's.
func userNames(f *framework.Framework, cluster string, size int) []string {
	names := []string{f.ClientServiceHost(cluster)}
	for i := 0; i < size; i++ {
		names = append(names, f.MemberHost(cluster, i))
	}
	return names
}

// servedBound is how long a renewed certificate may take from a member's Secret to what its
// etcd serves: the kubelet refreshes a mounted Secret on its pod's periodic sync (a minute,
// up to half as much again for jitter), and etcd reads the files on its next handshake.
const servedBound = 3 * time.Minute

// waitServed waits until the certificate served through each forward (by a name of the
// caller's: a member, its Secret) is one that want accepts.
func waitServed(f *framework.Framework, desc string, forwards map[string]*framework.Forward, want func(member string, c *x509.Certificate) error) {
	f.T().Helper()
	f.Eventually(desc, servedBound, func() (bool, error) {
		for member, fw := range forwards {
			c, err := fw.ServedCertificate()
			if err != nil {
				return false, fmt.Errorf("%s: %w", member, err)
			}
			if err := want(member, c); err != nil {
				return false, fmt.Errorf("%s: %w", member, err)
			}
		}
		return true, nil
	})
}

// TestTLSUserSecrets: a cluster whose peer and client certificates come from the user's
// Secrets, in cert-manager's layout, of one CA of the user's. A client with a certificate of
// that CA reaches it through the client Service. The client Secret is then renewed (same CA,
// same names, a new serial), as cert-manager does it: the operator copies it into every
// member's Secret and the members serve it, under the writer, without a member restarted.
func TestTLSUserSecrets(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "user"
	ca := framework.NewTestCA(t, "e2e user CA")
	serving := framework.Cert{CommonName: name, Names: userNames(f, name, 3), Usages: pki.ServerAuth | pki.ClientAuth}
	f.ApplySecret("user-peer", framework.TLSSecretData(ca, framework.IssueCert(t, ca, serving)))
	f.ApplySecret("user-client", framework.TLSSecretData(ca, framework.IssueCert(t, ca, serving)))
	f.ApplySecret("app", framework.TLSSecretData(ca,
		framework.IssueCert(t, ca, framework.Cert{CommonName: "app", Usages: pki.ClientAuth})))
	f.Apply(clusterManifest(name, "  size: 3\n  tls:\n    peer: {secretName: user-peer}\n    client: {secretName: user-client}\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)

	f.StartEtcdctlPod("app", "app")
	appGet := func() {
		t.Helper()
		out, err := f.EtcdctlIn("app", "--endpoints=https://"+f.ClientServiceHost(name)+":2379",
			"--cacert="+framework.SecretFile("app", framework.SecretCA), "--cert="+framework.SecretFile("app", framework.SecretCert),
			"--key="+framework.SecretFile("app", framework.SecretKey), "--command-timeout=5s", "get", "nothing")
		if err != nil {
			t.Fatalf("etcdctl with a client certificate of the user's CA: %q %v", out, err)
		}
	}
	appGet()

	writer := f.StartWriter(name)
	uids, restarts := podUIDs(f, name), restartCounts(f, name)
	forwards := map[string]*framework.Forward{}
	for i := 0; i < 3; i++ {
		forwards[fmt.Sprintf("%s-%d", name, i)] = f.PortForward(fmt.Sprintf("%s-%d", name, i), 2379)
	}
	renewed := framework.IssueCert(t, ca, serving)
	f.ApplySecret("user-client", framework.TLSSecretData(ca, renewed))
	t.Logf("user-client renewed: serial %s", serial(renewed.Cert))
	isRenewed := func(c *x509.Certificate) error {
		if c.SerialNumber.Cmp(renewed.Cert.SerialNumber) != 0 {
			return fmt.Errorf("serial %s, want the renewed %s", serial(c), serial(renewed.Cert))
		}
		return nil
	}
	// The operator looks at a Secret it does not own on its periodic pass.
	f.Eventually("the renewed certificate in every member's Secret", 2*time.Minute, func() (bool, error) {
		for i := 0; i < 3; i++ {
			c, err := f.SecretCertificate(memberTLSSecret(name, i), keyServerCert)
			if err != nil {
				return false, err
			}
			if err := isRenewed(c); err != nil {
				return false, fmt.Errorf("%s: %w", memberTLSSecret(name, i), err)
			}
		}
		return true, nil
	})
	waitServed(f, "every member serving the renewed certificate", forwards, func(_ string, c *x509.Certificate) error { return isRenewed(c) })
	appGet()
	writer.WaitAcked(5, time.Minute)
	writer.StopAndVerify(name + "-0")
	checkNoRestart(t, f, name, uids, restarts)
	if ok, err := f.ClusterInSpec(name, 3); !ok {
		t.Errorf("after the renewal: %v", err)
	}
}

// TestTLSBadSecrets: a peer Secret the operator cannot use stops the cluster before any pod:
// Degraded, reason TLSSecretInvalid, with a message that names the Secret and what is wrong
// with it; once the user fixes the Secret, the cluster starts. One cluster per defect, side
// by side.
func TestTLSBadSecrets(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	ca := framework.NewTestCA(t, "e2e user CA")
	// A certificate for member 0 of cluster, valid now unless c says otherwise.
	leaf := func(cluster string, c framework.Cert) pki.KeyPair {
		c.CommonName, c.Usages = cluster, pki.ServerAuth|pki.ClientAuth
		if c.Names == nil {
			c.Names = []string{f.MemberHost(cluster, 0)}
		}
		return framework.IssueCert(t, ca, c)
	}
	cases := []struct {
		cluster string
		// data is the bad Secret's, nil for none at all; reason is what pkg/pki says of it,
		// cause what the Degraded message must say.
		data   func(cluster string) map[string][]byte
		reason string
		cause  string
	}{
		{"absent", nil, "", "does not exist"},
		{"nokey", func(n string) map[string][]byte {
			d := framework.TLSSecretData(ca, leaf(n, framework.Cert{}))
			delete(d, framework.SecretKey)
			return d
		}, pki.ReasonMissingKey, `tls\.key`},
		{"expired", func(n string) map[string][]byte {
			return framework.TLSSecretData(ca, leaf(n, framework.Cert{Issued: time.Now().Add(-24 * time.Hour), Lifetime: time.Hour}))
		}, pki.ReasonExpired, `(?i)expired`},
		{"notyet", func(n string) map[string][]byte {
			return framework.TLSSecretData(ca, leaf(n, framework.Cert{Issued: time.Now().Add(24 * time.Hour)}))
		}, pki.ReasonNotYetValid, `(?i)not (yet )?valid`},
		{"mismatch", func(n string) map[string][]byte {
			d := framework.TLSSecretData(ca, leaf(n, framework.Cert{}))
			d[framework.SecretKey] = leaf(n, framework.Cert{}).KeyPEM
			return d
		}, pki.ReasonKeyMismatch, `(?i)tls\.key.*(not the key|match)`},
		{"nonames", func(n string) map[string][]byte {
			return framework.TLSSecretData(ca, leaf(n, framework.Cert{Names: []string{"elsewhere.example"}}))
		}, pki.ReasonMissingNames, ""},
	}
	secret := func(cluster string) string { return "peer-" + cluster }
	for _, tc := range cases {
		if tc.data != nil {
			d := tc.data(tc.cluster)
			// The Secret is bad in the way the case says, as the operator's own checks see it.
			_, p := pki.Check(d[framework.SecretCert], d[framework.SecretKey], d[framework.SecretCA],
				[]string{f.MemberHost(tc.cluster, 0)}, pki.ServerAuth|pki.ClientAuth, time.Now())
			if p == nil || p.Reason != tc.reason {
				t.Fatalf("%s: the test's Secret has problem %+v, want %s", tc.cluster, p, tc.reason)
			}
			f.ApplySecret(secret(tc.cluster), d)
		}
		f.Apply(clusterManifest(tc.cluster, fmt.Sprintf("  size: 1\n  storage: {emptyDir: {}}\n  tls:\n    peer: {secretName: %s}\n", secret(tc.cluster))))
	}
	for _, tc := range cases {
		cause := tc.cause
		if cause == "" {
			cause = regexp.QuoteMeta(f.MemberHost(tc.cluster, 0))
		}
		msg := waitCondition(t, f, tc.cluster, "Degraded", "True", "TLSSecretInvalid", 2*time.Minute)
		if !strings.Contains(msg, secret(tc.cluster)) || !regexp.MustCompile(cause).MatchString(msg) {
			t.Errorf("%s: Degraded says %q, want the Secret %s named and /%s/", tc.cluster, msg, secret(tc.cluster), cause)
		}
		if pods := podUIDs(f, tc.cluster); len(pods) != 0 {
			t.Errorf("%s: member pods %v made on a Secret that cannot be used", tc.cluster, pods)
		}
	}

	// Fixed the way a user does: the Secret replaced by a good one (deleted first, as the bad
	// one's type may differ).
	for _, tc := range cases {
		f.MustNS("delete", "secret", secret(tc.cluster), "--ignore-not-found")
		f.ApplySecret(secret(tc.cluster), framework.TLSSecretData(ca, leaf(tc.cluster, framework.Cert{})))
	}
	for _, tc := range cases {
		f.WaitClusterInSpec(tc.cluster, 1, 3*time.Minute)
		// Its resources go to the clusters still starting.
		f.Delete("etcdcluster/" + tc.cluster)
	}
}

// rotationLifetime is TestTLSLeafRotation's spec.tls.leafLifetime. The last third of a leaf's
// life (more, by pkg/pki's allowance for clock skew) must cover the operator's next pass and
// the kubelet's refresh of the mounted Secret (servedBound), or members would serve a
// certificate that has expired; the first two thirds set how long a renewal takes to come.
const rotationLifetime = 5 * time.Minute

// TestTLSLeafRotation: the operator renews the leaves it issues at two thirds of their life,
// twice over, under the writer: every member's peer, server and client certificates and the
// applications' client certificate get new serials, the members serve the new ones, no
// member restarts, the CAs stay, no acknowledged write is lost and no put fails twice in a
// row.
func TestTLSLeafRotation(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	if least := operatorTLSMinLifetime(t, f); least > rotationLifetime {
		t.Skipf("the operator raises leafLifetime %s to its --%s=%s: deploy test/e2e/deploy (make test does)", rotationLifetime, tlsMinLifetimeFlag, least)
	}
	const name = "rotate"
	f.Apply(clusterManifest(name, fmt.Sprintf("  size: 3\n  tls: {peer: {}, client: {}, leafLifetime: %gm}\n", rotationLifetime.Minutes())))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)
	writer := f.StartWriter(name)
	uids, restarts := podUIDs(f, name), restartCounts(f, name)

	// The leaves the operator renews; the members' ports, by their Secret; the CAs, which
	// must not change.
	type ref struct{ secret, key string }
	refs := []ref{{framework.ClientSecretName(name), framework.SecretCert}}
	peers, servers := map[string]*framework.Forward{}, map[string]*framework.Forward{}
	for i := 0; i < 3; i++ {
		s, member := memberTLSSecret(name, i), fmt.Sprintf("%s-%d", name, i)
		refs = append(refs, ref{s, keyPeerCert}, ref{s, keyServerCert}, ref{s, keyClientCert})
		peers[s], servers[s] = f.PortForward(member, 2380), f.PortForward(member, 2379)
	}
	read := func(r ref) (*x509.Certificate, error) { return f.SecretCertificate(r.secret, r.key) }
	cas := map[ref]string{{name + "-peer-ca", framework.SecretCert}: "", {name + "-client-ca", framework.SecretCert}: ""}
	for r := range cas {
		c, err := read(r)
		if err != nil {
			t.Fatal(err)
		}
		cas[r] = serial(c)
	}

	for round := 1; round <= 2; round++ {
		before := map[ref]string{}
		due := time.Now()
		for _, r := range refs {
			c, err := read(r)
			if err != nil {
				t.Fatal(err)
			}
			before[r] = serial(c)
			if at := pki.RenewAt(c); at.After(due) {
				due = at
			}
		}
		// renewed are the serials each leaf has had since the round began: what a member
		// serves is one of them even when a later renewal has come meanwhile.
		renewed := map[ref]map[string]bool{}
		note := func(r ref) error {
			c, err := read(r)
			if err != nil {
				return err
			}
			if s := serial(c); s != before[r] {
				if renewed[r] == nil {
					renewed[r] = map[string]bool{}
				}
				renewed[r][s] = true
			}
			return nil
		}
		// Renewed on the operator's first pass after the last of them is due.
		f.Eventually(fmt.Sprintf("renewal %d of every leaf", round), time.Until(due)+time.Minute, func() (bool, error) {
			var waiting []string
			for _, r := range refs {
				if err := note(r); err != nil {
					return false, err
				}
				if renewed[r] == nil {
					waiting = append(waiting, r.secret+"/"+r.key)
				}
			}
			return len(waiting) == 0, fmt.Errorf("not renewed yet: %s", strings.Join(waiting, ", "))
		})
		t.Logf("renewal %d: every leaf has a new serial", round)
		servesRenewed := func(key string) func(string, *x509.Certificate) error {
			return func(secret string, c *x509.Certificate) error {
				r := ref{secret, key}
				if err := note(r); err != nil {
					return err
				}
				if !renewed[r][serial(c)] {
					return fmt.Errorf("serves %s %s, not a renewal of %s", key, serial(c), before[r])
				}
				return nil
			}
		}
		waitServed(f, fmt.Sprintf("renewal %d served on the peer ports", round), peers, servesRenewed(keyPeerCert))
		waitServed(f, fmt.Sprintf("renewal %d served on the client ports", round), servers, servesRenewed(keyServerCert))
		writer.WaitAcked(5, time.Minute)
	}

	log := writer.StopAndVerify(name + "-0")
	if n := log.MostConsecutiveFailures(); n > 1 {
		t.Errorf("the writer failed %d puts in a row (%d failed in all, longest wait %.1fs): a renewal interrupted clients",
			n, log.Failed, log.LongestWait(framework.WriteLog{}))
	}
	checkNoRestart(t, f, name, uids, restarts)
	for r, was := range cas {
		if c, err := read(r); err != nil || serial(c) != was {
			t.Errorf("CA %s/%s changed or unreadable (%v): leaf renewals must keep the CAs", r.secret, r.key, err)
		}
	}
}
