package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// Builders of the states and pods the status tables start from: the same as the planner's
// tables (pkg/cluster/plan), which a test of another package cannot share.

// voter is a healthy voting member with the given ordinal; its ID is ordinal+100.
func voter(o int) plan.MemberView {
	return plan.MemberView{Ordinal: o, ID: uint64(o + 100), Name: naming.Name("c", o), Healthy: true}
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

func joining(o int, published bool, initial ...int) plan.PodView {
	p := running(o, initial...)
	p.ClusterState = etcdutil.ClusterStateExisting
	p.Phase, p.Published = corev1.PodPending, published
	return p
}

func seedPod(published bool) plan.PodView {
	p := joining(0, published, 0)
	p.ClusterState = etcdutil.ClusterStateNew
	return p
}

// stuckPod is a pod the scheduler finds no node for (since the zero time).
func stuckPod(p plan.PodView) plan.PodView {
	p.Problem = &plan.PodProblem{Reason: corev1.PodReasonUnschedulable}
	return p
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

func unbound(c plan.ClaimView) plan.ClaimView { c.Bound, c.MemberID = false, 0; return c }

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

// lastVoters are the voting members status last listed, voter(o) each (ID o+100).
func lastVoters(ordinals ...int) []plan.LastMember {
	out := make([]plan.LastMember, 0, len(ordinals))
	for _, o := range ordinals {
		out = append(out, plan.LastMember{Ordinal: o, ID: uint64(o + 100)})
	}
	return out
}

// answering: the members of the given ordinals answer a status request, each with its raft
// index (in the same order).
func answering(ordinalIndex ...int) map[int]etcdutil.Status {
	out := map[int]etcdutil.Status{}
	for i := 0; i+1 < len(ordinalIndex); i += 2 {
		o := ordinalIndex[i]
		out[o] = etcdutil.Status{ID: uint64(o + 100), RaftIndex: uint64(ordinalIndex[i+1]), RaftTerm: 3}
	}
	return out
}

// lostQuorum is a cluster of `size` on claims that status last listed whole and that answers
// no member list, with the given pods, claims and answers.
func lostQuorum(size int, ps map[int]plan.PodView, cs map[int]plan.ClaimView, st map[int]etcdutil.Status) plan.State {
	all := make([]int, size)
	for i := range all {
		all[i] = i
	}
	return onClaims(plan.State{Size: size, Bootstrapped: true, LastMembers: lastVoters(all...), Pods: ps, Claims: cs,
		Statuses: st, Now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
		Recovery: plan.QuorumLossView{Policy: api.QuorumLossManual, Grace: 5 * time.Minute}})
}

// passAt is the time of the passes in the stuck-pod tables.
var passAt = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// troubled gives a pod a problem that began ago before passAt.
func troubled(p plan.PodView, reason, message string, ago time.Duration) plan.PodView {
	p.Problem = &plan.PodProblem{Reason: reason, Message: message, Since: passAt.Add(-ago)}
	return p
}

func pullFails(p plan.PodView, ago time.Duration) plan.PodView {
	return troubled(p, "ImagePullBackOff", `container etcd: Back-off pulling image "nope/etcd:v3.6.16"`, ago)
}

// goneSince is a pod terminating whose grace period ended ago before passAt.
func goneSince(p plan.PodView, node string, ago time.Duration) plan.PodView {
	p.Terminating, p.Node, p.DeletionDeadline = true, node, passAt.Add(-ago)
	return p
}

// noList is a cluster of three that ran, whose member c-0 answers (term 3, no leader known)
// while no member list does; c-2's pod is gone.
func noList(now, since time.Time) plan.State {
	return plan.State{Name: "c", Size: 3, Bootstrapped: true, LastMembers: lastVoters(0, 1, 2),
		Pods: pods(running(0, 0, 1, 2), running(1, 0, 1, 2)), Statuses: map[int]etcdutil.Status{0: {ID: 100, RaftTerm: 3}},
		Now: now, ElectingSince: since}
}

func newCluster(size int32) *api.EtcdCluster {
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: api.EtcdClusterSpec{Size: size, Version: api.DefaultVersion, Repository: api.DefaultRepository,
			Storage: member.LegacyStorage()},
	}
}
