// Package pki is the certificate authority behind the operator's TLS support, and the checks
// it applies to certificates a user brings in a Secret.
//
// It only computes: no Kubernetes client, no files, no clock. Every function that depends on
// the time takes it as now, so a pass decides with the one time it observed and tests choose
// any instant.
//
// Keys are ECDSA on P-256. Every Go crypto/tls that etcd 3.5, 3.6 and 3.7 are built with
// accepts it for server and client certificates, with TLS 1.2 and 1.3, and implements it in
// constant time; cert-manager issues it on request (256 is its ECDSA default size), so members
// see the same kind of certificate from either source. Its keys and signatures are a fraction
// of the size of RSA's at comparable strength: Secrets stay small, a key can be generated
// inside a reconcile pass, where RSA's prime search would hold the pass up, and the
// handshakes that peers redo on every reconnection are short. Certificates a user brings may
// hold RSA or Ed25519 keys as well: Check accepts what Go's TLS accepts.
//
// A certificate is renewed at two thirds of its validity (RenewAt). The remaining third is the
// margin for everything between the decision to renew and the new certificate being served:
// an operator that is down or behind, a failing Secret write, the kubelet refreshing the
// mounted Secret (up to its sync period plus its cache's lifetime), and clocks that disagree.
// With the default 90-day leaves that is 30 days to notice and fix a renewal that fails,
// while a certificate still lives long enough that renewals are rare events, not constant
// churn. The same rule serves the CAs, whose lifetime the API keeps at three leaf lifetimes or
// more, and a leaf never outlives the CA that signed it (Issue caps it).
package pki
