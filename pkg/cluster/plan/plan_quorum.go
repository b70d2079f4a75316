package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// The planner's rules for a quorum lost for good, in a cluster whose members keep their data
// on claims. No member list answers without quorum, so the members are the last ones known:
// status.members (or, for a cluster applied again over retained claims, the claims' marks).
//
// A member's data is gone for good when its claim is gone, is being deleted, holds another
// member's data or is a new one (unmarked: a member that status lists as voting has started,
// and its claim was marked when it was seen listed), or when member-init found its data dir
// empty. Data that is merely not back yet (a pod starting, a node that went) is not gone: the
// restart rules bring it back, and quorum with it.
//
// When the members whose data is gone for good are a majority of the last-known voting
// members, waiting cannot bring quorum back. With at least one member's data left, the loss
// is reported (Degraded, reason QuorumLost: the survivors with their raft indexes, the lost
// members, the command that recovers) and spec.recovery.quorumLoss chooses:
//
//   - Manual waits for the annotation AnnotationRecoverQuorum; FromSurvivor for its grace
//     period, counted from when the loss was first reported.
//   - "highest" (the annotation, or FromSurvivor) is first resolved to the survivor with the
//     highest raft index, lowest ordinal on a tie, written in the annotation in its place:
//     the survivor's index is known only while its pod answers, and its pod is replaced next.
//   - The named member's pod is deleted and made again with --force-new-cluster on its data:
//     it becomes a cluster of one. A member named that is not a survivor is refused.
//   - Once etcd lists members again, the annotation is removed (reconciler), the survivor's
//     pod is deleted to restart it without the flag (deleteForcedPod), and the others' leftover
//     pods and claims are replaced by the usual rules as the cluster grows back.
//
// Never two survivors: while a pod started with --force-new-cluster exists, no other is made.
// Never a new, empty cluster in place of data: with every member's data gone the loss is
// reported and nothing is done.

// QuorumLossView is what the planner knows of how a cluster recovers from a quorum lost for
// good.
type QuorumLossView struct {
	// Policy is spec.recovery.quorumLoss; Grace its gracePeriodSeconds.
	Policy api.QuorumLossPolicy
	Grace  time.Duration
	// RecoverFrom is the AnnotationRecoverQuorum on the cluster: a member's name,
	// api.RecoverFromHighest, or empty.
	RecoverFrom string
	// Since is when the loss was first reported (the Degraded condition's lastTransitionTime
	// while its reason is QuorumLost); zero when it is not reported yet.
	Since time.Time
}

// LastMember is a member status last listed.
type LastMember struct {
	Ordinal int
	ID      uint64
	// Learner: it was listed as a learner. A voting member listed has started.
	Learner bool
	// Version is the etcd version it reported then; empty if it did not answer.
	Version string
}

// quorumLoss is the assessment of the last-known voting members while no member list
// answers.
type quorumLoss struct {
	// voters counted (countedVoters), and their ordinals in order.
	voters   int
	ordinals []int
	// gone: the members whose data is gone for good, with why, by ordinal.
	gone map[int]string
	// held: the members whose data may be there; survivors: those of them whose etcd answers
	// on it, by ordinal.
	held      []LastMember
	survivors map[int]etcdfacts.Status
}

// forGood: quorum can never come back by waiting (fewer members hold data than a majority:
// of two voters, one lost is enough), and some member's data is left.
func (q quorumLoss) forGood() bool {
	return q.voters > 0 && len(q.held) < Quorum(q.voters) && len(q.held) > 0
}

// allGone: every last-known member's data is gone.
func (q quorumLoss) allGone() bool { return q.voters > 0 && len(q.held) == 0 }

// assessQuorum sorts the voting members a pass without a member list counts with
// (countedVoters: status's, and those that may have become voters since) into those whose data is gone for good and
// those whose data may be left, and finds the survivors among them.
func assessQuorum(s State) quorumLoss {
	q := quorumLoss{gone: map[int]string{}, survivors: map[int]etcdfacts.Status{}}
	for _, m := range countedVoters(s) {
		q.voters++
		q.ordinals = append(q.ordinals, m.Ordinal)
		if why := goneForGood(s, m); why != "" {
			q.gone[m.Ordinal] = why
			continue
		}
		q.held = append(q.held, m)
		if st, ok := s.Statuses[m.Ordinal]; ok && st.ID == m.ID {
			q.survivors[m.Ordinal] = st
		}
	}
	return q
}

// goneForGood says why member m's data is gone for good, or "" when it may be left.
func goneForGood(s State, m LastMember) string {
	c, hasClaim := s.Claims[m.Ordinal]
	p, hasPod := s.Pods[m.Ordinal]
	st, answers := s.Statuses[m.Ordinal]
	switch {
	case !hasClaim:
		return "its claim is gone"
	case c.Terminating:
		return "its claim is being deleted"
	case c.MemberID != 0 && c.MemberID != m.ID:
		return "its claim holds another member's data"
	case hasPod && !p.Terminating && p.DataLost:
		return "its data dir is empty"
	case answers && st.ID != m.ID:
		return "another member runs on its claim"
	case c.MemberID == 0 && !(answers && st.ID == m.ID):
		return "its claim is a new one"
	}
	return ""
}

// planQuorumLost is the rule for a quorum lost for good (see the top of this file). Every
// decision it makes reports the loss (Blocked QuorumLost): the condition stays, with the time
// it was first reported, until etcd lists members again.
func planQuorumLost(s State, q quorumLoss) Decision {
	report := quorumLostMessage(s, q)
	blocked := func(d Decision, format string, args ...any) Decision {
		d.Blocked = api.ReasonQuorumLost
		d.Report = fmt.Sprintf(format, args...) + "; " + report
		if d.Message == "" {
			d.Message = d.Report
		}
		return d
	}
	if name := s.Recovery.RecoverFrom; name != "" && name != api.RecoverFromHighest {
		return planForceNewCluster(s, q, name, blocked)
	}
	// The members whose data is left answer before one of them is chosen.
	if d, ok := restartMarked(s); ok {
		return blocked(d, "restarting the members whose data is left")
	}
	goAhead := s.Recovery.RecoverFrom == api.RecoverFromHighest
	if s.Recovery.Policy == api.QuorumLossFromSurvivor {
		goAhead = goAhead || !s.Now.Before(lostSince(s).Add(s.Recovery.Grace))
	}
	if !goAhead {
		return Decision{Blocked: api.ReasonQuorumLost, Message: report}
	}
	if silent := unanswered(s, q); len(silent) > 0 {
		// The highest raft index among those that answer may be lower than a silent one's:
		// choosing now could drop writes only that member holds.
		return blocked(Decision{}, "waiting for %s to answer before the survivor with the highest raft index is chosen: "+
			"its data may hold writes the others lack; to go ahead without it, name a survivor (%s) or delete its claim if its data is gone for good",
			strings.Join(silent, ", "), recoverCommand(s, q, true))
	}
	o, ok := highestSurvivor(q)
	if !ok {
		return blocked(Decision{}, "waiting for a survivor to answer")
	}
	st := q.survivors[o]
	return blocked(step(s, Action{Kind: ActionChooseSurvivor, Ordinal: o, MemberID: st.ID, RaftIndex: st.RaftIndex},
		api.ReasonRecoveringQuorum, "recovering from %s, the survivor with the highest raft index", o),
		"recovering from %s (raft index %d)", naming.Name(s.Name, o), st.RaftIndex)
}

// planForceNewCluster recovers from the member the annotation names: its pod is deleted,
// then made again with --force-new-cluster on its data.
func planForceNewCluster(s State, q quorumLoss, name string, blocked func(Decision, string, ...any) Decision) Decision {
	o, isMember := naming.Ordinal(s.Name, name)
	var survivor *LastMember
	for _, m := range q.held {
		if isMember && m.Ordinal == o {
			survivor = &m
		}
	}
	if survivor == nil {
		why := q.gone[o]
		if why == "" || !isMember {
			why = "it is not one of the last-known voting members"
		}
		return blocked(Decision{}, "the annotation %s names %s, which is not a survivor (%s): name a survivor",
			api.AnnotationRecoverQuorum, name, why)
	}
	p, hasPod := s.Pods[o]
	st, answers := q.survivors[o]
	a := Action{Kind: ActionForceNewCluster, Ordinal: o, MemberID: survivor.ID, InitialCluster: lastOrdinals(s),
		ClusterState: etcdfacts.ClusterStateExisting, RaftIndex: st.RaftIndex}
	switch {
	case hasPod && p.Terminating:
		return blocked(waiting(s, api.ReasonRecoveringQuorum, "waiting for the old pod of %s to go", o),
			"recovering from %s", name)
	case hasPod && !answers:
		return blocked(waiting(s, api.ReasonRecoveringQuorum, "waiting for %s to answer", o),
			"recovering from %s, whose etcd does not answer yet", name)
	case hasPod:
		return blocked(step(s, a, api.ReasonRecoveringQuorum,
			"deleting pod %s to restart it with --force-new-cluster", o),
			"recovering from %s (raft index %d)", name, st.RaftIndex)
	default:
		return blocked(step(s, a, api.ReasonRecoveringQuorum,
			"restarting %s with --force-new-cluster on its data, as a cluster of one", o),
			"recovering from %s", name)
	}
}

// waitForForcedSurvivor keeps to one survivor while no member list answers: a pod started with
// --force-new-cluster is waited for, and no other is made. ok is false when there is none,
// or when member-init found its data dir empty (its etcd never started).
func waitForForcedSurvivor(s State) (Decision, bool) {
	for _, o := range SortedOrdinals(s.Pods) {
		if p := s.Pods[o]; p.ForceNewCluster && !p.DataLost {
			return Decision{Blocked: api.ReasonQuorumLost, Progress: api.ReasonRecoveringQuorum, Message: fmt.Sprintf(
				"recovering from %s: waiting for it to start with --force-new-cluster, as a cluster of one", naming.Name(s.Name, o))}, true
		}
	}
	return Decision{}, false
}

// deleteForcedPod deletes, once etcd lists members again, a pod started with
// --force-new-cluster: the member restarts in place without the flag, before any member
// joins (a restart with it would drop them). A pod whose member is not listed must not force
// a cluster of its own beside the one that answers.
func deleteForcedPod(s State, members map[int]MemberView) (Decision, bool) {
	for _, o := range SortedOrdinals(s.Pods) {
		p := s.Pods[o]
		if !p.ForceNewCluster || p.Terminating {
			continue
		}
		if _, isMember := members[o]; isMember {
			return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, api.ReasonRecoveringQuorum,
				"deleting pod %s to restart it without --force-new-cluster, now that it is a cluster of one", o), true
		}
		return step(s, Action{Kind: ActionDeletePod, Ordinal: o}, api.ReasonRecoveringQuorum,
			"deleting pod %s: etcd answers without it, so it must not force a new cluster", o), true
	}
	return Decision{}, false
}

// unanswered names the members whose data may be left but whose etcd does not answer.
func unanswered(s State, q quorumLoss) []string {
	var out []string
	for _, m := range q.held {
		if _, ok := q.survivors[m.Ordinal]; !ok {
			out = append(out, naming.Name(s.Name, m.Ordinal)+" ("+PodCondition(s.Pods, m.Ordinal)+")")
		}
	}
	slices.Sort(out)
	return out
}

// highestSurvivor is the survivor with the highest raft index, the lowest ordinal on a tie.
func highestSurvivor(q quorumLoss) (int, bool) {
	best, found := 0, false
	for o, st := range q.survivors {
		b := q.survivors[best]
		if !found || st.RaftIndex > b.RaftIndex || (st.RaftIndex == b.RaftIndex && o < best) {
			best, found = o, true
		}
	}
	return best, found
}

// lostSince is when the loss was first reported; now when it is reported first in this pass.
func lostSince(s State) time.Time {
	if s.Recovery.Since.IsZero() {
		return s.Now
	}
	return s.Recovery.Since
}

// lastOrdinals are the ordinals of the last-known voting members, in order.
func lastOrdinals(s State) []int {
	out := make([]int, 0, len(s.LastMembers))
	for _, m := range s.LastMembers {
		if !m.Learner {
			out = append(out, m.Ordinal)
		}
	}
	slices.Sort(out)
	return out
}

// quorumLostMessage reports a quorum lost for good: the lost members and why, the survivors
// with their raft indexes, and what recovers the cluster.
func quorumLostMessage(s State, q quorumLoss) string {
	lost, left := lostAndLeft(s, q)
	msg := fmt.Sprintf("quorum lost for good: %d of %d voting members lost their data: %s; data left on: %s",
		len(q.gone), q.voters, strings.Join(lost, ", "), strings.Join(left, ", "))
	return msg + "; " + quorumLostTodo(s, q)
}

// allLostMessage reports a cluster whose every member's data is gone.
func allLostMessage(s State, q quorumLoss) string {
	lost, _ := lostAndLeft(s, q)
	return fmt.Sprintf("all data lost: every voting member lost its data: %s; the cluster is not re-created empty: "+
		"restore it from a backup into a new EtcdCluster", strings.Join(lost, ", "))
}

// lostAndLeft lists the last-known voting members whose data is gone, with why, and those
// whose data is left, with their raft indexes.
func lostAndLeft(s State, q quorumLoss) (lost, left []string) {
	for _, o := range q.ordinals {
		name := naming.Name(s.Name, o)
		if why, ok := q.gone[o]; ok {
			lost = append(lost, name+" ("+why+")")
		} else if st, ok := q.survivors[o]; ok {
			left = append(left, fmt.Sprintf("%s (raft index %d, term %d)", name, st.RaftIndex, st.RaftTerm))
		} else {
			left = append(left, name+" (does not answer yet)")
		}
	}
	return lost, left
}

// quorumLostTodo says what recovers the cluster.
func quorumLostTodo(s State, q quorumLoss) string {
	if from := s.Recovery.RecoverFrom; from != "" {
		return fmt.Sprintf("the annotation %s=%s asks to recover", api.AnnotationRecoverQuorum, from)
	}
	todo := fmt.Sprintf("to recover from %s with --force-new-cluster, losing the writes it does not have, run: %s",
		recoverTarget(s, q), recoverCommand(s, q, false))
	if s.Recovery.Policy == api.QuorumLossFromSurvivor {
		if wait := lostSince(s).Add(s.Recovery.Grace).Sub(s.Now).Round(time.Second); wait > 0 {
			todo = fmt.Sprintf("spec.recovery.quorumLoss is FromSurvivor: the operator recovers from the survivor with the highest raft index in %s; %s",
				wait, todo)
		}
	}
	return todo
}

// recoverTarget is the survivor a user would name: the one with the highest raft index among
// those that answer, or "highest" while none does.
func recoverTarget(s State, q quorumLoss) string {
	if o, ok := highestSurvivor(q); ok {
		return naming.Name(s.Name, o)
	}
	return api.RecoverFromHighest
}

// recoverCommand is the kubectl command that names recoverTarget as the survivor; overwrite
// when the annotation may be there already (it says "highest").
func recoverCommand(s State, q quorumLoss, overwrite bool) string {
	flag := ""
	if overwrite {
		flag = "--overwrite "
	}
	return fmt.Sprintf("kubectl annotate %setcdcluster %s%s %s=%s",
		flag, namespaceFlag(s), s.Name, api.AnnotationRecoverQuorum, recoverTarget(s, q))
}

// namespaceFlag is the -n flag a kubectl command for the cluster needs ("" when unknown).
func namespaceFlag(s State) string {
	if s.Namespace == "" {
		return ""
	}
	return "-n " + s.Namespace + " "
}
