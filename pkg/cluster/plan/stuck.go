package plan

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// Pods that cannot start, and pods that cannot go. A pod's trouble is read from the pod
// alone (pkg/cluster/podproblem.go: its conditions, its containers' states and restart
// counts) into PodView.Problem and PodView.DeletionDeadline, with the time it began
// taken from the pod's own timestamps, so that an operator restarted at any instant counts the
// same bound (the StuckAfter of bounds.go): before it, Progressing says the cluster waits for
// the pod; after it, Degraded says PodCannotStart (or PodStuckTerminating) with the kubelet's
// or the scheduler's own words, and the planner may act: a learner whose pod cannot start is removed, a voting member whose
// pod crash-loops is replaced while quorum permits.

// ReasonCrashLoop is the kubelet's waiting reason for a container restarted over and over;
// a crash-looping etcd container is reported with it while it briefly runs, too.
const ReasonCrashLoop = "CrashLoopBackOff"

// PodProblem is why a pod does not start, as the kubelet or the scheduler says it, and since
// when (from the pod's own timestamps).
type PodProblem struct {
	// Reason is the kubelet's waiting reason (ImagePullBackOff, CrashLoopBackOff, ...) or
	// the scheduler's (Unschedulable).
	Reason  string
	Message string
	Since   time.Time
	// Exited is, for etcd's own crash loop (ReasonCrashLoop), when its container's last run
	// ended; zero while it runs again (etcd is starting), for any other problem, and when the
	// kubelet does not say.
	Exited time.Time
}

// String is the problem as status and Events say it.
func (p PodProblem) String() string {
	if p.Message == "" {
		return p.Reason
	}
	return p.Reason + ": " + p.Message
}

// podStuck: the pod has had a problem for the StuckAfter bound or longer at the time of the
// pass.
func podStuck(s State, p PodView) bool {
	return p.Problem != nil && !s.Now.Before(p.Problem.Since.Add(s.bounds().StuckAfter))
}

// stuckTerminating: the pod is past its grace period (its deletion timestamp) by the
// StuckAfter bound and still there: its kubelet does not confirm it stopped, typically because
// its node stopped answering.
func stuckTerminating(s State, p PodView) bool {
	return p.Terminating && !p.DeletionDeadline.IsZero() && !s.Now.Before(p.DeletionDeadline.Add(s.bounds().StuckAfter))
}

// StuckPodsMessage names the pods that cannot start, past the bound, with what the kubelet or
// the scheduler says; "" when none.
func StuckPodsMessage(s State) string {
	var out []string
	for _, o := range SortedOrdinals(s.Pods) {
		if p := s.Pods[o]; podStuck(s, p) {
			msg := fmt.Sprintf("pod %s cannot start since %s (%s)", naming.Name(s.Name, o),
				p.Problem.Since.UTC().Format(time.RFC3339), p.Problem)
			if s.Persistent && p.Problem.Reason == corev1.PodReasonUnschedulable && strings.Contains(p.Problem.Message, volumeNodeConflict) &&
				othersKeepQuorum(s, o) {
				// Node-local storage (local-path): the pod can only run where its volume is.
				msg += "; its claim's volume can be used only on a node that cannot take the pod (cordoned, or gone): uncordon the node, or, if it is gone for good, " +
					deleteClaimCommand(s, o) + " and the member is replaced on a new claim elsewhere"
			}
			out = append(out, msg)
		}
	}
	return strings.Join(out, "; ")
}

// othersKeepQuorum: the voting members other than ordinal o are a healthy majority, so o's
// data is not the last copy of anything.
func othersKeepQuorum(s State, o int) bool {
	voting, healthy := VotingCounts(s.Members)
	for _, m := range s.Members {
		if m.Ordinal == o && m.Healthy && !m.Learner {
			healthy--
		}
	}
	return voting > 1 && healthy >= Quorum(voting)
}

// volumeNodeConflict is what the scheduler says of a node that the pod's volume cannot be used
// on (a local volume on another node).
const volumeNodeConflict = "volume node affinity conflict"

// StuckTerminatingMessage names the pods stuck terminating and says what only the user can do.
func StuckTerminatingMessage(s State) string {
	var out []string
	for _, o := range SortedOrdinals(s.Pods) {
		p := s.Pods[o]
		if !stuckTerminating(s, p) {
			continue
		}
		name := naming.Name(s.Name, o)
		msg := fmt.Sprintf("pod %s has been terminating since %s", name, p.DeletionDeadline.UTC().Format(time.RFC3339))
		if p.Node != "" {
			msg += " on node " + p.Node + ", which may have stopped answering"
		}
		msg += fmt.Sprintf("; the operator does not force-delete a pod whose node may still run it: once you know it does not, run kubectl delete pod %s%s --force --grace-period=0",
			namespaceFlag(s), name)
		if p.Node != "" {
			msg += " or kubectl delete node " + p.Node
		}
		out = append(out, msg)
	}
	return strings.Join(out, "; ")
}

// planCrashLooping is rule 5 for a voting member whose pod crash-loops past the bound: it is
// removed, only while the others keep a healthy majority, and then added again as a new
// member (its pod and claim, marked with the removed member, are replaced on the way). A
// member whose etcd answers (Healthy), or runs again or has just exited (downSinceCrash), is
// never replaced; a crash loop counts only the restarts since the pod was last ready
// (pkg/cluster/crashloop.go), so a node reboot is none.
//
// Only when the crash is the member's own: another healthy member runs a pod built from the
// same spec. Otherwise the crash may come from the spec (a value etcd refuses, a release that
// does not start), and replacing the member would wipe its data to add it again on that spec,
// to crash again: a pod rolled onto a spec the others are not on yet is the rollout's, which
// stops and says so (RolloutStuck), and a pod whose spec was set back since is rolled onto the
// current one, on its data (rule 8).
func planCrashLooping(s State) (Decision, bool) {
	for _, m := range SortedMembers(s.Members) {
		p, hasPod := s.Pods[m.Ordinal]
		if m.Learner || m.Healthy || !hasPod || p.Terminating || !podStuck(s, p) || !downSinceCrash(s, p) {
			continue
		}
		if !crashIsItsOwn(s, m, p) {
			continue
		}
		d := removeVoter(s, m, api.ReasonReplacingMember)
		d.Message += ": its pod crash-loops (" + p.Problem.String() + ")"
		return d, true
	}
	return Decision{}, false
}

// downSinceCrash: the pod's etcd crash-loops and has not run since its last exit, the StuckAfter bound
// ago or more. A member whose etcd runs again (starting: it replays its log, it waits for its
// peers) or has just exited is not replaced on that pass; a loop keeps the container down
// longer than that between runs (the kubelet's back-off), so the verdict comes in one.
func downSinceCrash(s State, p PodView) bool {
	return p.Problem.Reason == ReasonCrashLoop && !p.Problem.Exited.IsZero() && !s.Now.Before(p.Problem.Exited.Add(s.bounds().StuckAfter))
}

// crashIsItsOwn: another healthy voting member runs a pod built from the same spec as p, the
// pod of member m (both current, or both out of date on the same version; a pod's template
// hash covers its member's own flags, so hashes differ between members): that spec runs, so
// the crash comes from the member itself, its data.
func crashIsItsOwn(s State, m MemberView, p PodView) bool {
	for _, o := range s.Members {
		q, ok := s.Pods[o.Ordinal]
		if o.ID == m.ID || o.Learner || !o.Healthy || !ok || q.Terminating {
			continue
		}
		if q.Outdated == p.Outdated && (!p.Outdated || q.Version == p.Version) {
			return true
		}
	}
	return false
}
