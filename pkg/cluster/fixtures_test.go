package cluster

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Builders of the planner's views for the tests of this package: the same as the planner's
// tables (pkg/cluster/plan), which a test of another package cannot share.

// voter is a healthy voting member with the given ordinal; its ID is ordinal+100.
func voter(o int) plan.MemberView {
	return plan.MemberView{Ordinal: o, ID: uint64(o + 100), Name: member.Name("c", o), Healthy: true}
}

func leader(o int) plan.MemberView { m := voter(o); m.Leader = true; return m }

func sick(m plan.MemberView) plan.MemberView { m.Healthy = false; return m }

// running is a running, published pod of a member in a cluster of the given ordinals.
func running(o int, initial ...int) plan.PodView {
	if len(initial) == 0 {
		initial = []int{o}
	}
	state := etcdutil.ClusterStateExisting
	if o == 0 && len(initial) == 1 {
		state = etcdutil.ClusterStateNew
	}
	return plan.PodView{Ordinal: o, Phase: corev1.PodRunning, Published: true,
		ClusterState: state, InitialCluster: initial}
}

func pods(ps ...plan.PodView) map[int]plan.PodView {
	out := map[int]plan.PodView{}
	for _, p := range ps {
		out[p.Ordinal] = p
	}
	return out
}

// claim is a bound claim of ordinal o marked with the member voter(o) (ID o+100).
func claim(o int) plan.ClaimView {
	return plan.ClaimView{Ordinal: o, Bound: true, MemberID: uint64(o + 100)}
}

func markedBy(c plan.ClaimView, id uint64) plan.ClaimView { c.MemberID = id; return c }

func claims(cs ...plan.ClaimView) map[int]plan.ClaimView {
	out := map[int]plan.ClaimView{}
	for _, c := range cs {
		out[c.Ordinal] = c
	}
	return out
}

// onClaims is a cluster whose members keep their data on claims (whenScaled Delete).
func onClaims(s plan.State) plan.State {
	s.Persistent, s.DeleteScaledClaims = true, true
	if s.Claims == nil {
		s.Claims = claims()
	}
	return s
}

func forced(p plan.PodView) plan.PodView { p.ForceNewCluster = true; return p }

// rolled is the running pod of member o of a size-3 cluster, built for etcd version v, made
// age before rolloutNow; outdated when it was built from an earlier spec.
func rolled(o int, v string, outdated bool, age time.Duration) plan.PodView {
	p := running(o, 0, 1, 2)
	p.Version, p.Outdated, p.Created = v, outdated, rolloutNow.Add(-age)
	return p
}

// reporting is what member o answers: its version and its raft indexes.
func reporting(o int, v string, applied uint64) etcdutil.Status {
	return etcdutil.Status{ID: uint64(o + 100), Version: v, RaftIndex: 1000, RaftAppliedIndex: applied}
}

// passAt is the time of the passes in the stuck-pod tables.
var passAt = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var rolloutNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
