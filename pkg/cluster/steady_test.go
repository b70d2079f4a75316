package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// A steady cluster is looked at again after the idle check, sooner where the cluster's Lease
// or a short TLS leaf needs more looks than that.
func TestWhenSteady(t *testing.T) {
	leaf := func(d time.Duration) *api.TLSSpec {
		return &api.TLSSpec{Peer: &api.TLSSource{}, LeafLifetime: &metav1.Duration{Duration: d}}
	}
	for _, tc := range []struct {
		name string
		deps Deps
		tls  *api.TLSSpec
		want time.Duration
	}{
		{"production defaults", Deps{}, nil, DefaultIdleCheck},
		{"default leaves", Deps{}, &api.TLSSpec{Peer: &api.TLSSource{}}, DefaultIdleCheck},
		{"a shorter idle check", Deps{IdleCheck: 10 * time.Second}, nil, 10 * time.Second},
		{"a longer idle check", Deps{IdleCheck: 40 * time.Second}, nil, 40 * time.Second},
		{"the shortest takeover bound", Deps{TakeoverAfter: time.Minute}, nil, 10 * time.Second},
		{"a longer idle check, the default takeover bound", Deps{IdleCheck: 5 * time.Minute}, nil, DefaultTakeoverAfter / 6},
		{"five-minute leaves", Deps{MinLifetime: 5 * time.Minute}, leaf(5 * time.Minute), 10 * time.Second},
		{"five-minute leaves raised to the hour", Deps{}, leaf(5 * time.Minute), DefaultIdleCheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(3)
			c.Spec.TLS = tc.tls
			r := &Reconciler{deps: tc.deps}
			if got := r.whenSteady(c); got != tc.want {
				t.Errorf("whenSteady = %v, want %v", got, tc.want)
			}
		})
	}
}
