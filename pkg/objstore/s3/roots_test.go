package s3

import (
	"crypto/x509"
	"testing"
)

// An https endpoint without caSecret is verified by public certificate authorities, even
// where the system has none (the operator's image).
func TestPublicRootsAreNeverEmpty(t *testing.T) {
	pool, err := publicRoots()
	if err != nil || pool.Equal(x509.NewCertPool()) {
		t.Fatalf("publicRoots: an empty pool, %v", err)
	}
}
