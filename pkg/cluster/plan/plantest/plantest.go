// Package plantest builds the planner's views for tests: the members, pods, claims and
// answers that the tables of the planner (pkg/cluster/plan), of status (pkg/cluster/status)
// and of the cluster loop (pkg/cluster) start from. It is for tests only; the planner does not
// import it (its tables are in package plan_test). Member IDs follow one convention: the
// member with ordinal o has ID o+100, in every view.
package plantest

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// PassAt is the time of the passes in the tables that need one (State.Now).
var PassAt = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Voter is a healthy voting member of cluster c with the given ordinal; its ID is ordinal+100.
func Voter(o int) plan.MemberView {
	return plan.MemberView{Ordinal: o, ID: uint64(o + 100), Name: naming.Name("c", o), Healthy: true}
}

// Leader is Voter(o), the leader.
func Leader(o int) plan.MemberView { m := Voter(o); m.Leader = true; return m }

// Sick is m not answering its health check.
func Sick(m plan.MemberView) plan.MemberView { m.Healthy = false; return m }

// Running is a running, published pod of a member in a cluster of the given ordinals.
func Running(o int, initial ...int) plan.PodView {
	if len(initial) == 0 {
		initial = []int{o}
	}
	state := etcdfacts.ClusterStateExisting
	if o == 0 && len(initial) == 1 {
		state = etcdfacts.ClusterStateNew
	}
	return plan.PodView{Ordinal: o, Phase: corev1.PodRunning, Published: true,
		ClusterState: state, InitialCluster: initial}
}

// Joining is the pending pod of a member joining a cluster of the given ordinals.
func Joining(o int, published bool, initial ...int) plan.PodView {
	p := Running(o, initial...)
	p.ClusterState = etcdfacts.ClusterStateExisting
	p.Phase, p.Published = corev1.PodPending, published
	return p
}

// SeedPod is the pending pod of the seed of a new cluster.
func SeedPod(published bool) plan.PodView {
	p := Joining(0, published, 0)
	p.ClusterState = etcdfacts.ClusterStateNew
	return p
}

// StuckPod is a pod the scheduler finds no node for (since the zero time).
func StuckPod(p plan.PodView) plan.PodView {
	p.Problem = &plan.PodProblem{Reason: corev1.PodReasonUnschedulable}
	return p
}

// Forced is p started with --force-new-cluster.
func Forced(p plan.PodView) plan.PodView { p.ForceNewCluster = true; return p }

// Troubled gives a pod a problem that began ago before PassAt.
func Troubled(p plan.PodView, reason, message string, ago time.Duration) plan.PodView {
	p.Problem = &plan.PodProblem{Reason: reason, Message: message, Since: PassAt.Add(-ago)}
	return p
}

// PullFails is p failing to pull its image since ago before PassAt.
func PullFails(p plan.PodView, ago time.Duration) plan.PodView {
	return Troubled(p, "ImagePullBackOff", `container etcd: Back-off pulling image "nope/etcd:v3.6.16"`, ago)
}

// GoneSince is a pod terminating whose grace period ended ago before PassAt.
func GoneSince(p plan.PodView, node string, ago time.Duration) plan.PodView {
	p.Terminating, p.Node, p.DeletionDeadline = true, node, PassAt.Add(-ago)
	return p
}

// Rolled is the running pod of member o of a size-3 cluster, built for etcd version v, made
// age before PassAt; outdated when it was built from an earlier spec.
func Rolled(o int, v string, outdated bool, age time.Duration) plan.PodView {
	p := Running(o, 0, 1, 2)
	p.Version, p.Outdated, p.Created = v, outdated, PassAt.Add(-age)
	return p
}

// Pods maps the pods by ordinal.
func Pods(ps ...plan.PodView) map[int]plan.PodView {
	out := map[int]plan.PodView{}
	for _, p := range ps {
		out[p.Ordinal] = p
	}
	return out
}

// Claim is a bound claim of ordinal o marked with the member Voter(o) (ID o+100).
func Claim(o int) plan.ClaimView {
	return plan.ClaimView{Ordinal: o, Bound: true, MemberID: uint64(o + 100)}
}

// MarkedBy is c marked with the member id.
func MarkedBy(c plan.ClaimView, id uint64) plan.ClaimView { c.MemberID = id; return c }

// RanOn is c recording that its member's data has run on etcd release ("3.7").
func RanOn(c plan.ClaimView, release string) plan.ClaimView { c.DataRanOn = release; return c }

// Unbound is c not bound to a volume yet, and so not marked.
func Unbound(c plan.ClaimView) plan.ClaimView { c.Bound, c.MemberID = false, 0; return c }

// Claims maps the claims by ordinal.
func Claims(cs ...plan.ClaimView) map[int]plan.ClaimView {
	out := map[int]plan.ClaimView{}
	for _, c := range cs {
		out[c.Ordinal] = c
	}
	return out
}

// OnClaims is a cluster whose members keep their data on claims (whenScaled Delete).
func OnClaims(s plan.State) plan.State {
	s.Persistent, s.DeleteScaledClaims = true, true
	if s.Claims == nil {
		s.Claims = Claims()
	}
	return s
}

// LastVoters are the voting members status last listed, Voter(o) each (ID o+100).
func LastVoters(ordinals ...int) []plan.LastMember {
	out := make([]plan.LastMember, 0, len(ordinals))
	for _, o := range ordinals {
		out = append(out, plan.LastMember{Ordinal: o, ID: uint64(o + 100)})
	}
	return out
}

// Answering: the members of the given ordinals answer a status request, each with its raft
// index (in the same order).
func Answering(ordinalIndex ...int) map[int]etcdfacts.Status {
	out := map[int]etcdfacts.Status{}
	for i := 0; i+1 < len(ordinalIndex); i += 2 {
		o := ordinalIndex[i]
		out[o] = etcdfacts.Status{ID: uint64(o + 100), RaftIndex: uint64(ordinalIndex[i+1]), RaftTerm: 3}
	}
	return out
}

// Reporting is what member o answers: its version and its raft indexes.
func Reporting(o int, v string, applied uint64) etcdfacts.Status {
	return etcdfacts.Status{ID: uint64(o + 100), Version: v, RaftIndex: 1000, RaftAppliedIndex: applied}
}

// LostQuorum is a cluster of `size` on claims that status last listed whole and that answers
// no member list, with the given pods, claims and answers.
func LostQuorum(size int, ps map[int]plan.PodView, cs map[int]plan.ClaimView, st map[int]etcdfacts.Status) plan.State {
	all := make([]int, size)
	for i := range all {
		all[i] = i
	}
	return OnClaims(plan.State{Size: size, Bootstrapped: true, LastMembers: LastVoters(all...), Pods: ps, Claims: cs,
		Statuses: st, Now: PassAt,
		Recovery: plan.QuorumLossView{Policy: api.QuorumLossManual, Grace: 5 * time.Minute}})
}

// NoList is a cluster of three that ran, whose member c-0 answers (term 3, no leader known)
// while no member list does; c-2's pod is gone.
func NoList(now, since time.Time) plan.State {
	return plan.State{Name: "c", Size: 3, Bootstrapped: true, LastMembers: LastVoters(0, 1, 2),
		Pods: Pods(Running(0, 0, 1, 2), Running(1, 0, 1, 2)), Statuses: map[int]etcdfacts.Status{0: {ID: 100, RaftTerm: 3}},
		Now: now, ElectingSince: since}
}
