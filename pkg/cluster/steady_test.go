package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
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

// A pass with nothing to do waits the whole idle check only when the cluster is settled; a
// state that a bound may turn into a report (a pod not ready, one that cannot start, a member
// missing) is looked at again at the old cadence.
func TestNothingToDoWhileUnsettled(t *testing.T) {
	f := newFixture(t)
	c := newCluster(3)
	settledState := func() plan.State {
		s := plan.State{Size: 3, MembersKnown: true, Pods: map[int]plan.PodView{}}
		for ord := range 3 {
			s.Members = append(s.Members, plan.MemberView{ID: uint64(101 + ord), Ordinal: ord, Healthy: true})
			s.Pods[ord] = plan.PodView{Ordinal: ord, Phase: corev1.PodRunning}
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		change func(*plan.State)
		want   time.Duration
	}{
		{"settled", func(*plan.State) {}, DefaultIdleCheck},
		{"a pod not ready", func(s *plan.State) { p := s.Pods[1]; p.NotReady = true; s.Pods[1] = p }, whileUnsettled},
		{"a pod that cannot start", func(s *plan.State) {
			p := s.Pods[2]
			p.Problem = &plan.PodProblem{Reason: "ImagePullBackOff"}
			s.Pods[2] = p
		}, whileUnsettled},
		{"a pod terminating", func(s *plan.State) { p := s.Pods[0]; p.Terminating = true; s.Pods[0] = p }, whileUnsettled},
		{"a member unhealthy", func(s *plan.State) { s.Members[2].Healthy = false }, whileUnsettled},
		{"a learner", func(s *plan.State) { s.Members[2].Learner = true }, whileUnsettled},
		{"a member missing", func(s *plan.State) { s.Members = s.Members[:2] }, whileUnsettled},
		{"members unknown", func(s *plan.State) { s.MembersKnown = false }, whileUnsettled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settledState()
			tc.change(&s)
			_, requeue, err := f.r.takeDecision(context.Background(), c, observed(c), s, plan.Decision{})
			if err != nil || requeue != tc.want {
				t.Errorf("takeDecision asks to run again after %v (%v), want %v", requeue, err, tc.want)
			}
		})
	}
}
