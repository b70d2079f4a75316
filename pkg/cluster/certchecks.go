package cluster

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// certChecks remembers the certificates pki.Check found good, so that a pass does not verify
// again the signatures of certificates that have not changed since the last one: every pass
// checks each member's certificates, and verifying their chains is most of what a steady TLS
// cluster's pass costs. What Check answers depends on its inputs and on the time only through
// the validity of the certificates given (the leaf and its chain, the CAs), so a good answer
// holds, for the same inputs, as long as every one of those certificates is valid: it is
// remembered for that window, and only when the time it was given falls inside it. A problem
// is never remembered. Entries not asked for within certCheckKeep are dropped. Safe for
// concurrent use.
type certChecks struct {
	mu sync.Mutex
	// cur holds the entries asked for since started; prev those of the period before.
	cur, prev map[[sha256.Size]byte]checkedCert
	started   time.Time
}

// certCheckKeep is how long an entry no pass asks for is kept: a cluster's passes ask for its
// certificates every few seconds.
const certCheckKeep = 10 * time.Minute

// checkedCert is a leaf Check found good, and the window every certificate checked with it
// is valid in.
type checkedCert struct {
	leaf        *x509.Certificate
	from, until time.Time
}

// check is pki.Check, remembered. The leaf returned may be shared: it is not to be modified.
func (k *certChecks) check(certPEM, keyPEM, caPEM []byte, names []string, usages pki.Usage, now time.Time) (*x509.Certificate, *pki.Problem) {
	key := certCheckKey(certPEM, keyPEM, caPEM, names, usages)
	if leaf := k.remembered(key, now); leaf != nil {
		return leaf, nil
	}
	leaf, problem := pki.Check(certPEM, keyPEM, caPEM, names, usages, now)
	if problem != nil {
		return nil, problem
	}
	from, until, ok := validWindow(certPEM, caPEM)
	if ok && !now.Before(from) && !now.After(until) {
		k.mu.Lock()
		k.rotate(now)
		k.cur[key] = checkedCert{leaf: leaf, from: from, until: until}
		k.mu.Unlock()
	}
	return leaf, nil
}

// remembered is the leaf remembered under key when now is inside its window, else nil.
func (k *certChecks) remembered(key [sha256.Size]byte, now time.Time) *x509.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rotate(now)
	e, ok := k.cur[key]
	if !ok {
		if e, ok = k.prev[key]; ok {
			k.cur[key] = e
		}
	}
	if !ok || now.Before(e.from) || now.After(e.until) {
		return nil
	}
	return e.leaf
}

// rotate starts a new period once the current one is older than certCheckKeep (or the clock
// went back): the entries of the period before, not asked for since, are dropped. k.mu must
// be held.
func (k *certChecks) rotate(now time.Time) {
	if k.cur != nil && now.Sub(k.started) < certCheckKeep && !now.Before(k.started) {
		return
	}
	k.prev, k.cur, k.started = k.cur, map[[sha256.Size]byte]checkedCert{}, now
}

// certCheckKey is a digest of everything Check reads but the time.
func certCheckKey(certPEM, keyPEM, caPEM []byte, names []string, usages pki.Usage) [sha256.Size]byte {
	h := sha256.New()
	parts := [][]byte{certPEM, keyPEM, caPEM, {byte(usages)}}
	for _, n := range names {
		parts = append(parts, []byte(n))
	}
	for _, p := range parts {
		// Each part's length first: no two different inputs read the same.
		_ = binary.Write(h, binary.BigEndian, uint64(len(p)))
		h.Write(p)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// validWindow is when every certificate of certPEM and caPEM is valid; ok is false when they
// do not parse (Check would not have found them good).
func validWindow(certPEM, caPEM []byte) (from, until time.Time, ok bool) {
	chain, err := pki.ParseCertificates(certPEM)
	if err != nil {
		return from, until, false
	}
	cas, err := pki.ParseCertificates(caPEM)
	if err != nil {
		return from, until, false
	}
	for i, c := range append(chain, cas...) {
		if i == 0 || c.NotBefore.After(from) {
			from = c.NotBefore
		}
		if i == 0 || c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	return from, until, len(chain)+len(cas) > 0
}
