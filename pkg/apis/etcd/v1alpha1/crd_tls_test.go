package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// spec.tls: whose certificates a port uses is fixed while it uses TLS (the operator moves a
// running cluster's client port and its peers on and off TLS, not onto other certificates);
// the lifetimes are bounded and may change.

const (
	peerImmutable   = "spec.tls: Invalid value: spec.tls.peer cannot change while it is set"
	peerDropped     = "spec.tls: Invalid value: spec.tls cannot be dropped while it sets peer"
	clientImmutable = "spec.tls: Invalid value: spec.tls.client cannot change while it is set"
	notASecret      = "secretName must be a Secret name: lowercase letters, digits, '-' and '.'"
	leafTooLong     = "leafLifetime must be at most 8760h (one year)"
	caTooLong       = "caLifetime must be at most 87600h (ten years)"
	caTooShort      = "spec.tls: Invalid value: caLifetime must be at least three times leafLifetime"
)

func TestCRDValidatesTLSSecretName(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct{ name, want string }{
		{"peer-tls", ""},
		{"etcd.peer.v2", ""},
		{"a", ""},
		{"0", ""},
		{strings.Repeat("a", 253), ""},
		{strings.Repeat("a", 254), "Too long: may not be more than 253 bytes"},
		{"Peer-TLS", notASecret},
		{"peer_tls", notASecret},
		{"-peer", notASecret},
		{"peer-", notASecret},
		{"peer..tls", notASecret},
		{".peer", notASecret},
		{"peer tls", notASecret},
		{"", notASecret},
	} {
		for _, port := range []string{"peer", "client"} {
			t.Run(port+"/"+tc.name, func(t *testing.T) {
				_, errs := a.create(etcdCluster("  tls: {"+port+": {secretName: \""+tc.name+"\"}}\n", ""))
				want := tc.want
				if want != "" {
					want = "spec.tls." + port + ".secretName"
				}
				checkErrors(t, errs, want)
				checkErrors(t, errs, tc.want)
			})
		}
	}
}

func TestCRDValidatesTLSLifetimes(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct{ name, tls, want string }{
		{"none: the operator's defaults", "{peer: {}}", ""},
		{"defaults written out", "{peer: {}, leafLifetime: 2160h, caLifetime: 43800h}", ""},
		{"leaf of a year", "{leafLifetime: 8760h}", ""},
		{"leaf of a year in minutes", "{leafLifetime: 525600m}", ""},
		{"leaf over a year", "{leafLifetime: 8761h}", leafTooLong},
		{"leaf a second over a year", "{leafLifetime: 8760h0m1s}", leafTooLong},
		{"ca of ten years", "{caLifetime: 87600h}", ""},
		{"ca over ten years", "{caLifetime: 87601h}", caTooLong},
		{"ca three times the leaf", "{leafLifetime: 1000h, caLifetime: 3000h}", ""},
		{"ca just under three times the leaf", "{leafLifetime: 1000h, caLifetime: 2999h59m59s}", caTooShort},
		{"ca equal to the leaf", "{leafLifetime: 2160h, caLifetime: 2160h}", caTooShort},
		{"short leaf alone: ca default is far longer", "{leafLifetime: 1h}", ""},
		{"short ca alone", "{caLifetime: 1h}", ""},
		{"leaf in days", "{leafLifetime: 90d}", "spec.tls.leafLifetime: Invalid value: \"90d\": spec.tls.leafLifetime in body should match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := a.create(etcdCluster("  tls: "+tc.tls+"\n", ""))
			checkErrors(t, errs, tc.want)
		})
	}
}

// TestCRDTLSCannotChange: spec.tls.peer and spec.tls.client cannot be pointed at other
// certificates while set; spec.tls.peer is removed only explicitly, spec.tls kept (not with
// spec.tls dropped whole, as a replace with an old manifest or a client that does not know
// spec.tls would: peer TLS is the default); both ports may be moved on or off TLS, and the
// lifetimes, and everything else of a cluster with or without spec.tls, may change.
func TestCRDTLSCannotChange(t *testing.T) {
	a := newAPIServer(t)
	const size = "  size: 3\n"
	tls := func(v string) string { return size + "  tls: " + v + "\n" }
	for _, tc := range []struct{ name, old, new, want string }{
		{"no spec.tls, unchanged", size, size, ""},
		{"no spec.tls, size changed", size, "  size: 5\n", ""},
		{"created without spec: size set", "", size, ""},
		{"peer TLS, unchanged", tls("{peer: {}}"), tls("{peer: {}}"), ""},
		{"peer TLS, size changed", tls("{peer: {}}"), "  size: 5\n  tls: {peer: {}}\n", ""},

		{"peer added to a cluster without spec.tls", size, tls("{peer: {}}"), ""},
		{"spec.tls {} added", size, tls("{}"), ""},
		{"lifetimes added to a cluster without spec.tls", size, tls("{leafLifetime: 720h}"), ""},
		{"spec.tls removed", tls("{peer: {}}"), size, peerDropped},
		{"spec.tls {} removed", tls("{}"), size, ""},
		{"peer added", tls("{}"), tls("{peer: {}}"), ""},
		{"peer from a Secret added", tls("{}"), tls("{peer: {secretName: p}}"), ""},
		{"peer removed", tls("{peer: {}}"), tls("{}"), ""},
		{"peer from a Secret removed", tls("{peer: {secretName: p}}"), tls("{}"), ""},
		{"peer removed, lifetimes kept", tls("{peer: {}, leafLifetime: 720h}"), tls("{leafLifetime: 720h}"), ""},
		{"peer to a Secret", tls("{peer: {}}"), tls("{peer: {secretName: peer-tls}}"), peerImmutable},
		{"peer to another Secret", tls("{peer: {secretName: a}}"), tls("{peer: {secretName: b}}"), peerImmutable},
		{"peer from a Secret to the operator's", tls("{peer: {secretName: a}}"), tls("{peer: {}}"), peerImmutable},
		{"peer removed as client is added", tls("{peer: {}}"), tls("{client: {}}"), ""},
		{"spec.tls with peer from a Secret removed", tls("{peer: {secretName: p}, client: {}}"), size, peerDropped},
		{"client added", tls("{peer: {}}"), tls("{peer: {}, client: {}}"), ""},
		{"client added with spec.tls", size, tls("{client: {}}"), ""},
		{"client from a Secret added", tls("{peer: {}}"), tls("{peer: {}, client: {secretName: c}}"), ""},
		{"client removed", tls("{peer: {}, client: {}}"), tls("{peer: {}}"), ""},
		{"client removed with spec.tls", tls("{client: {secretName: c}}"), size, ""},
		{"client to a Secret", tls("{client: {}}"), tls("{client: {secretName: client-tls}}"), clientImmutable},
		{"client to another Secret", tls("{client: {secretName: a}}"), tls("{client: {secretName: b}}"), clientImmutable},
		{"client from a Secret to the operator's", tls("{peer: {}, client: {secretName: a}}"), tls("{peer: {}, client: {}}"), clientImmutable},

		{"leafLifetime added", tls("{peer: {}}"), tls("{peer: {}, leafLifetime: 720h}"), ""},
		{"leafLifetime changed", tls("{peer: {}, leafLifetime: 720h}"), tls("{peer: {}, leafLifetime: 1440h}"), ""},
		{"lifetimes removed", tls("{peer: {}, leafLifetime: 720h, caLifetime: 8760h}"), tls("{peer: {}}"), ""},
		{"caLifetime changed, plaintext", tls("{caLifetime: 8760h}"), tls("{caLifetime: 17520h}"), ""},
		{"lifetimes changed, client from a Secret", tls("{client: {secretName: c}, leafLifetime: 720h}"), tls("{client: {secretName: c}, leafLifetime: 24h}"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := a.update(a.main, etcdCluster(tc.new, ""), etcdCluster(tc.old, ""))
			checkErrors(t, errs, tc.want)
		})
	}
}

// TestCRDStatusUpdatesKeepTLS: the operator writes the status of clusters created before
// spec.tls existed; the status subresource keeps the stored spec, so a spec.tls sent along is
// dropped rather than refused, and the rule never refuses a status write.
func TestCRDStatusUpdatesKeepTLS(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct{ name, oldSpec, newSpec, newStatus string }{
		{"no spec.tls: members counted", "  size: 3\n", "  size: 3\n", "  size: 3\n  readyMembers: 3\n"},
		{"no spec.tls: a spec.tls sent along is ignored", "  size: 3\n", "  size: 3\n  tls: {peer: {}}\n", "  size: 3\n"},
		{"no spec.tls: TLS status written", "  size: 3\n", "  size: 3\n", "  tls: {clientSecretName: demo-client-tls}\n"},
		{"peer TLS: status written", "  tls: {peer: {}}\n", "  tls: {peer: {}}\n", "  tls: {peerCAExpiry: \"2031-01-01T00:00:00Z\"}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := a.update(a.status, etcdCluster(tc.newSpec, tc.newStatus), etcdCluster(tc.oldSpec, "  size: 3\n"))
			checkErrors(t, errs, "")
		})
	}
}

// TestCRDDoesNotDefaultTLS: the schema gives spec.tls no default. The API server applies
// schema defaults to every object it reads from storage, so a default there would turn peer
// TLS on for clusters running in plaintext; new clusters get it from the admission policy
// instead (crd_tls_default_test.go).
func TestCRDDoesNotDefaultTLS(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct{ name, spec string }{
		{"no spec", ""},
		{"empty spec", "  {}\n"},
		{"size only", "  size: 3\n"},
		{"everything else", "  size: 3\n  version: 3.6.16\n  storage: {emptyDir: {}}\n  recovery: {}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, errs := a.create(etcdCluster(tc.spec, ""))
			checkErrors(t, errs, "")
			if tls, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "tls"); found {
				t.Errorf("spec.tls = %v after the API server's create, want none", tls)
			}
			// As read back from storage: the defaults are applied again on every read.
			stored := a.decode(etcdCluster(tc.spec, ""))
			a.main.PrepareForCreate(context.Background(), stored)
			if tls, found, _ := unstructured.NestedFieldNoCopy(stored.Object, "spec", "tls"); found {
				t.Errorf("spec.tls = %v on the object read back, want none", tls)
			}
		})
	}
}

// A lifetime that is not a Go duration is refused by its pattern, with no rule's type
// conversion error beside it.
func TestCRDTLSLifetimeNotADuration(t *testing.T) {
	a := newAPIServer(t)
	for _, field := range []string{"leafLifetime", "caLifetime"} {
		_, errs := a.create(etcdCluster("  tls: {"+field+": 90d}\n", ""))
		msg := errs.ToAggregate()
		if msg == nil || !strings.Contains(msg.Error(), "should match") || strings.Contains(msg.Error(), "type conversion") {
			t.Errorf("%s: 90d refused with %v; want the pattern's message alone", field, msg)
		}
	}
}
