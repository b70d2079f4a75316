package cluster

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"

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
	if peer != nil && !peer.frozen {
		data[member.KeyPeerCA] = peer.trust
		if err := t.serving(data, old, member.KeyPeerCert, member.KeyPeerKey, peer,
			pki.Request{CommonName: self, DNSNames: names, Usages: pki.ServerAuth | pki.ClientAuth}); err != nil {
			return false, err
		}
	}
	if client != nil && !client.frozen {
		data[member.KeyServerCA] = client.servedCA
		data[member.KeyClientCA] = client.trust
		serverNames := append(slices.Clone(names), member.ClientServiceNames(t.c)...)
		serverNames = append(serverNames, "localhost")
		if err := t.serving(data, old, member.KeyServerCert, member.KeyServerKey, client,
			pki.Request{CommonName: self, DNSNames: serverNames, IPs: loopback, Usages: pki.ServerAuth}); err != nil {
			return false, err
		}
	}
	if client != nil && client.clientIssuer != nil {
		if err := t.leaf(data, old, member.KeyClientCert, member.KeyClientKey, client.clientIssuer,
			pki.Request{CommonName: self, Usages: pki.ClientAuth}); err != nil {
			return false, err
		}
	}
	if len(data) > 0 {
		if err := t.write(ctx, name, corev1.SecretTypeOpaque, data, have); err != nil {
			return false, err
		}
	}
	return complete(t.c, mountsClient, data, t.now), nil
}

// freezeMovedTrust freezes a port whose CAs would change for the members: etcd reads the CAs
// it trusts only when it starts, so members that run would refuse a certificate of another
// CA, and a member given the new CA alone would refuse theirs. It is the pass's Problem;
// nothing of the port is written, and members without its certificates are held back.
func (t *tlsPass) freezeMovedTrust(ctx context.Context, peer, client *portSource) error {
	wants := map[*portSource]map[string][]byte{}
	if peer != nil && !peer.frozen {
		wants[peer] = map[string][]byte{member.KeyPeerCA: peer.trust}
	}
	if client != nil && !client.frozen && !t.clientIdle {
		wants[client] = map[string][]byte{member.KeyClientCA: client.trust, member.KeyServerCA: client.servedCA}
	}
	for _, ord := range t.ordinals {
		name := member.TLSSecretName(t.c.Name, ord)
		have, err := t.r.secret(ctx, t.c.Namespace, name)
		if err != nil {
			return err
		}
		if have == nil || !metav1.IsControlledBy(have, t.c) {
			continue
		}
		for src, want := range wants {
			if key, changed := trustChanged(have.Data, want); changed && !src.frozen {
				t.fail("the CA members trust changed (%s of Secret %s differs from what %s holds now); this operator version does not move a running cluster to another CA: put back the CA members trust (docs/tls.md)",
					key, name, t.sourceSecret())
				src.frozen = true
			}
		}
	}
	return nil
}

// trustKeys are the keys of a member's Secret that say which CAs it trusts and verifies by.
var trustKeys = []string{member.KeyPeerCA, member.KeyClientCA, member.KeyServerCA}

// trustChanged reports the first key of trustKeys whose value old holds and want changes.
func trustChanged(old, want map[string][]byte) (string, bool) {
	for _, k := range trustKeys {
		if len(old[k]) > 0 && len(want[k]) > 0 && !bytes.Equal(old[k], want[k]) {
			return k, true
		}
	}
	return "", false
}

// sourceSecret names the user's Secrets spec.tls names, for messages.
func (t *tlsPass) sourceSecret() string {
	var names []string
	for _, s := range []*api.TLSSource{t.c.Spec.TLS.Peer, t.c.Spec.TLS.Client} {
		if s != nil && s.SecretName != "" && !slices.Contains(names, s.SecretName) {
			names = append(names, s.SecretName)
		}
	}
	if len(names) == 0 {
		return "the operator's CA Secret"
	}
	return "Secret " + strings.Join(names, " / ")
}
