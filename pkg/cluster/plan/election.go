package plan

import (
	"fmt"
	"strings"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// Members that answer while no member list does: a leader is being elected, or quorum is
// lost. etcd's member list is a linearizable read, which waits for a leader, so an election
// that outlasts the list's timeout looks like a lost quorum for a pass or two. For the
// Election bound (bounds.go) that is reported as an election (Progressing ElectingLeader) and
// Available and Degraded keep what they said, so a short election neither flips Available
// nor raises a Warning; past it, Degraded says NoQuorum and names the members that answer
// and those that do not. The time the election was first seen is the Progressing condition's
// lastTransitionTime, so a restarted operator counts from the same instant.

// planNoLeader is the rule for members that answer while no member list does.
func planNoLeader(s State) (Decision, bool) {
	if len(s.Statuses) == 0 {
		return Decision{}, false
	}
	since := s.ElectingSince
	if since.IsZero() {
		since = s.Now
	}
	if s.Now.Before(since.Add(s.bounds().Election)) {
		return Decision{Progress: api.ReasonElectingLeader, Message: fmt.Sprintf(
			"%s answer but cannot list the members yet: waiting for a leader to be elected", answeringMembers(s))}, true
	}
	return Decision{Blocked: api.ReasonNoQuorum, Message: fmt.Sprintf(
		"no leader since %s: %s answer but cannot list the members, fewer than a majority reach each other; %s",
		since.UTC().Format(time.RFC3339), answeringMembers(s), silent(s))}, true
}

// answeringMembers names the members that answered this pass, with their raft term and the leader
// they know of.
func answeringMembers(s State) string {
	var out []string
	for _, o := range SortedOrdinals(s.Statuses) {
		st := s.Statuses[o]
		lead := "no leader"
		if st.Leader != 0 {
			lead = "leader " + naming.FormatID(st.Leader)
		}
		out = append(out, fmt.Sprintf("%s (term %d, %s)", naming.Name(s.Name, o), st.RaftTerm, lead))
	}
	return strings.Join(out, ", ")
}

// silent names the last-known members that did not answer, with what their pods say, and
// the members status may have missed that the assessment waits for (missedMembers).
func silent(s State) string {
	var out []string
	for _, m := range s.LastMembers {
		if _, ok := s.Statuses[m.Ordinal]; !ok {
			out = append(out, naming.Name(s.Name, m.Ordinal)+" ("+PodCondition(s.Pods, m.Ordinal)+")")
		}
	}
	missed := missedMembers(s)
	switch {
	case len(out) == 0 && missed == "":
		return "every member's pod answers"
	case len(out) == 0:
		return missed
	case missed == "":
		return "not answering: " + strings.Join(out, ", ")
	}
	return "not answering: " + strings.Join(out, ", ") + "; " + missed
}
