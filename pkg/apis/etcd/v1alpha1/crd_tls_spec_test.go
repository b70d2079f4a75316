package v1alpha1_test

import "testing"

// An update that drops spec whole (kubectl replace of a manifest without spec, relying on the
// defaults: the admission policy gave it spec.tls.peer at creation) is refused like one that
// drops spec.tls with its peer: the rule is on the object, since the API server evaluates a
// transition rule on spec only when both the old and the new object have one.
func TestCRDPeerNotRemovedWithSpec(t *testing.T) {
	a := newAPIServer(t)
	errs := a.update(a.main, etcdCluster("", ""), etcdCluster("  size: 3\n  tls: {peer: {}}\n", ""))
	checkErrors(t, errs, peerDropped)
}
