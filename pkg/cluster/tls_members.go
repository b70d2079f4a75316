package cluster

import (
	"bytes"
	"context"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// Each member's own Secret, which its pod mounts, kept in step with the ports' sources.

// ensureMember keeps member ord's own Secret, and says whether it holds every certificate its
// pod mounts (the client port's when mountsClient), none expired. The keys of a frozen port
// are kept as they are; the others are issued, renewed or copied.
func (t *tlsPass) ensureMember(ctx context.Context, ord int, peer, client *portSource, mountsClient bool) (bool, error) {
	name := member.TLSSecretName(t.c.Name, ord)
	have, err := t.r.secret(ctx, t.c.Namespace, name)
	if err != nil {
		return false, err
	}
	if have != nil && !metav1.IsControlledBy(have, t.c) {
		t.fail("Secret %s, where member %s's certificates are kept, is not this cluster's; the operator leaves it alone: delete or rename it",
			name, member.Name(t.c.Name, ord))
		return false, nil
	}
	var old map[string][]byte
	if have != nil {
		old = have.Data
	}
	data := maps.Clone(old)
	if data == nil {
		data = map[string][]byte{}
	}
	self := member.Name(t.c.Name, ord)
	names := member.MemberNames(t.c, ord)
	peerReq := pki.Request{CommonName: self, DNSNames: names, Usages: pki.ServerAuth | pki.ClientAuth}
	if err := t.portKeysFrom(data, old, peer, peerKeys, peerReq, ord); err != nil {
		return false, err
	}
	serverNames := append(slices.Clone(names), member.ClientServiceNames(t.c)...)
	serverNames = append(serverNames, "localhost")
	serverReq := pki.Request{CommonName: self, DNSNames: serverNames, IPs: loopback, Usages: pki.ServerAuth}
	if err := t.portKeysFrom(data, old, client, clientKeys, serverReq, ord); err != nil {
		return false, err
	}
	if client != nil && client.clientIssuer != nil {
		if err := t.leaf(data, old, member.KeyClientCert, member.KeyClientKey, client.clientIssuer,
			pki.Request{CommonName: self, Usages: pki.ClientAuth}); err != nil {
			return false, err
		}
	}
	if len(data) > 0 {
		if err := t.write(ctx, name, corev1.SecretTypeOpaque, data, leavesOf(peer, client), have); err != nil {
			return false, err
		}
	}
	t.memberTrust[ord] = map[string][]byte{}
	for _, k := range member.TrustKeys(true, true) {
		if len(data[k]) > 0 {
			t.memberTrust[ord][k] = data[k]
		}
	}
	return complete(t.peerMounted, mountsClient, data, t.now), nil
}

// portKeysFrom fills in a port's keys of member ord's Secret from the port's source: kept as
// they are while it is frozen; kept, renewed or copied from another member's while it moves
// off TLS (keepLeaving); else what it trusts, and its serving key pair (serving).
func (t *tlsPass) portKeysFrom(data, old map[string][]byte, src *portSource, k portKeys, r pki.Request, ord int) error {
	switch {
	case src == nil || src.frozen:
		return nil
	case src.leaving:
		return t.keepLeaving(data, old, src, k, r, ord)
	case k.port == "peer":
		data[member.KeyPeerCA] = src.trust
	default:
		data[member.KeyServerCA], data[member.KeyClientCA] = src.servedCA, src.trust
	}
	return t.serving(data, old, src, k, r, ord)
}

// leavesOf are the rotation records (annotationLeavesOf) a member Secret written this pass
// carries, by port whose Secrets the pass writes: the record of a rotation whose leaves are
// the new CAs', or "" (none) otherwise. A record left from an earlier rotation is removed: the
// CAs it names may come back (a user's CA set back), and it would then say that this rotation's
// leaves were switched before any member trusted them.
func leavesOf(peer, client *portSource) map[string]string {
	out := map[string]string{}
	for port, src := range map[string]*portSource{"peer": peer, "client": client} {
		// A port moving off TLS keeps the record as it is: a move set back onto TLS goes on
		// from where the rotation stood.
		if src != nil && !src.frozen && !src.leaving {
			out[annotationLeavesOf(port)] = src.leavesOf
		}
	}
	return out
}

// sourceSecret names the user's Secrets spec.tls names, for messages.
func (t *tlsPass) sourceSecret() string {
	var names []string
	var sources []*api.TLSSource
	if t.c.Spec.TLS != nil {
		sources = []*api.TLSSource{t.c.Spec.TLS.Peer, t.c.Spec.TLS.Client}
	}
	for _, s := range sources {
		if s != nil && s.SecretName != "" && !slices.Contains(names, s.SecretName) {
			names = append(names, s.SecretName)
		}
	}
	if len(names) == 0 {
		return "the operator's CA Secret"
	}
	return "Secret " + strings.Join(names, " / ")
}

// complete reports whether a member's Secret data holds every key its pod mounts (the peer
// port's with peer, the client port's with client), and
// whether its certificates are still valid at now: a member started on an expired one would
// be refused by its peers or clients.
func complete(peer, client bool, data map[string][]byte, now time.Time) bool {
	for _, k := range member.TLSKeysOf(peer, client) {
		if len(data[k]) == 0 {
			return false
		}
	}
	for _, k := range []string{member.KeyPeerCert, member.KeyServerCert, member.KeyClientCert} {
		if len(data[k]) == 0 {
			continue
		}
		certs, err := pki.ParseCertificates(data[k])
		if err != nil || len(certs) == 0 || !now.Before(certs[0].NotAfter) {
			return false
		}
	}
	return len(data) > 0 || (!peer && !client)
}

// loopback is the address tools inside a member's pod dial.
var loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func sameNames(have, want []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(have)), slices.Sorted(slices.Values(want)))
}
