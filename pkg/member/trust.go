package member

import (
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// What a member pod trusts. etcd reads the CA files it trusts (--peer-trusted-ca-file,
// --trusted-ca-file) only when it starts, and member-init reads the CA it verifies the other
// members by (KeyServerCA) only when it starts too (docs/tls-reload.md): a member's trust is
// what its Secret held when its pod was made. Pod records it on the pod (AnnotationTrust), as
// the fingerprints of the CAs of each trust key the pod mounts, and ReadTemplate reads it
// back. A CA rotation (pkg/cluster/plan/rotation.go) changes what the Secrets trust, rolls
// the pods whose record differs, and decides from the records which CAs every member trusts.

// AnnotationTrust records on a member pod the CAs it trusts, as TrustStamp writes them. Pods
// made before CA rotation existed carry none.
const AnnotationTrust = "etcd.operator.dev/trust"

// TrustKeys are the keys of a member's Secret that hold CAs the pod trusts: with peer TLS, the
// peer CAs; when its client port serves TLS, the CAs of clients' certificates and those that
// verify the members' client ports.
func TrustKeys(peer, client bool) []string {
	var keys []string
	if peer {
		keys = append(keys, KeyPeerCA)
	}
	if client {
		keys = append(keys, KeyClientCA, KeyServerCA)
	}
	return keys
}

// TrustStamp is what AnnotationTrust says of a pod made on a member Secret holding data, for
// a pod with peer TLS (peer) whose client port serves TLS (client): for each of its TrustKeys,
// key=fingerprint,fingerprint (sorted), joined by ";". Empty for a pod without TLS.
func TrustStamp(data map[string][]byte, peer, client bool) string {
	var parts []string
	for _, k := range TrustKeys(peer, client) {
		parts = append(parts, k+"="+strings.Join(pki.Fingerprints(data[k]), ","))
	}
	return strings.Join(parts, ";")
}

// ParseTrust reads a TrustStamp back: the fingerprints by trust key. nil for "" (a pod that
// recorded nothing).
func ParseTrust(stamp string) map[string][]string {
	if stamp == "" {
		return nil
	}
	out := map[string][]string{}
	for _, part := range strings.Split(stamp, ";") {
		k, v, _ := strings.Cut(part, "=")
		var fps []string
		if v != "" {
			fps = strings.Split(v, ",")
		}
		slices.Sort(fps)
		out[k] = fps
	}
	return out
}

// trustCurrent: a pod that recorded have trusts what target says its Secret holds now. An
// empty target compares nothing (the pass does not know what the pod's Secret holds).
func trustCurrent(have, target string) bool {
	return target == "" || have == target
}
