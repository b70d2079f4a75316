package cluster

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Pods that cannot start, and pods that cannot go. A pod's trouble is read from the pod
// alone (its conditions, its containers' states and restart counts), with the time it began
// taken from the pod's own timestamps, so that an operator restarted at any instant counts the
// same bound: before it, Progressing says the cluster waits for the pod; after it, Degraded
// says PodCannotStart (or PodStuckTerminating) with the kubelet's or the scheduler's own words,
// and the planner may act: a learner whose pod cannot start is removed, a voting member whose
// pod crash-loops is replaced while quorum permits.

// stuckAfter is how long a pod may be in trouble before the cluster says so and the planner
// acts on it: long enough for an image pull to be retried and a crash to be restarted, short
// enough for a user watching `kubectl get etcd`.
const stuckAfter = 30 * time.Second

// crashLoopRestarts is how often etcd's container must have failed in a row to count as
// crash-looping: a member that failed once or twice while its peers came back is not.
const crashLoopRestarts = 3

// ReasonCrashLoop is the kubelet's waiting reason for a container restarted over and over;
// a crash-looping etcd container is reported with it while it briefly runs, too.
const ReasonCrashLoop = "CrashLoopBackOff"

// cannotStart are the kubelet's waiting reasons of a container that will not start by
// waiting a little: the image, the container's configuration, or the container itself.
var cannotStart = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	ReasonCrashLoop: true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// PodProblem is why a pod does not start, as the kubelet or the scheduler says it, and since
// when (from the pod's own timestamps).
type PodProblem struct {
	// Reason is the kubelet's waiting reason (ImagePullBackOff, CrashLoopBackOff, ...) or
	// the scheduler's (Unschedulable).
	Reason  string
	Message string
	Since   time.Time
}

// String is the problem as status and Events say it.
func (p PodProblem) String() string {
	if p.Message == "" {
		return p.Reason
	}
	return p.Reason + ": " + p.Message
}

// maxProblemMessage bounds what a pod's message adds to a condition: a termination message
// may hold the tail of etcd's log.
const maxProblemMessage = 300

// podProblem reads why the pod does not start, or nil. A crash-looping etcd container is
// reported as such whether it waits for its next restart or briefly runs.
func podProblem(p *corev1.Pod) *PodProblem {
	if p.DeletionTimestamp != nil {
		return nil
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &PodProblem{Reason: c.Reason, Message: clip(c.Message), Since: since(c.LastTransitionTime.Time, p)}
		}
	}
	if st := etcdStatus(p); st != nil && crashLooping(st) {
		msg := ""
		if t := st.LastTerminationState.Terminated; t != nil {
			msg = fmt.Sprintf("container %s restarted %d times, last exit code %d", st.Name, st.RestartCount, t.ExitCode)
			if m := strings.TrimSpace(t.Message); m != "" {
				// The message is the tail of the container's log: its last words (why etcd
				// exited) are at the end, so the end is what is kept.
				msg += ": " + clipHead(m, maxProblemMessage-len(msg)-len(": ..."))
			} else if t.Reason != "" {
				msg += " (" + t.Reason + ")"
			}
		}
		return &PodProblem{Reason: ReasonCrashLoop, Message: clip(msg), Since: notReadySince(p)}
	}
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if st.Name == member.EtcdContainerName && !st.Ready && st.RestartCount < crashLoopRestarts &&
			st.State.Waiting != nil && st.State.Waiting.Reason == ReasonCrashLoop {
			// etcd failed once or twice: its peers may just be coming back.
			continue
		}
		if w := st.State.Waiting; w != nil && cannotStart[w.Reason] {
			return &PodProblem{Reason: w.Reason, Message: clip(fmt.Sprintf("container %s: %s", st.Name, w.Message)),
				Since: notReadySince(p)}
		}
	}
	return nil
}

// etcdStatus is the status of the pod's etcd container, nil before it has one.
func etcdStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == member.EtcdContainerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// crashLooping: the container failed crashLoopRestarts times or more, its last run ended in an
// error, and it is not ready now.
func crashLooping(st *corev1.ContainerStatus) bool {
	t := st.LastTerminationState.Terminated
	return !st.Ready && st.RestartCount >= crashLoopRestarts && t != nil && t.ExitCode != 0
}

// notReadySince is when the pod last became not ready (or was created, before it has a Ready
// condition): when its trouble began, as far as the pod says.
func notReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return since(c.LastTransitionTime.Time, p)
		}
	}
	return p.CreationTimestamp.Time
}

func since(t time.Time, p *corev1.Pod) time.Time {
	if t.IsZero() || t.Before(p.CreationTimestamp.Time) {
		return p.CreationTimestamp.Time
	}
	return t
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxProblemMessage {
		return s[:maxProblemMessage] + "..."
	}
	return s
}

// clipHead is s with its white space folded, cut to its last n bytes (at a character's start)
// behind "...", when it is longer.
func clipHead(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "..." + s[i:]
}

// podStuck: the pod has had a problem for stuckAfter or longer at the time of the pass.
func podStuck(s State, p PodView) bool {
	return p.Problem != nil && !passTime(s).Before(p.Problem.Since.Add(stuckAfter))
}

// stuckTerminating: the pod is past its grace period (its deletion timestamp) by stuckAfter
// and still there: its kubelet does not confirm it stopped, typically because its node stopped
// answering.
func stuckTerminating(s State, p PodView) bool {
	return p.Terminating && !p.DeletionDeadline.IsZero() && !passTime(s).Before(p.DeletionDeadline.Add(stuckAfter))
}

// stuckPodsMessage names the pods that cannot start, past the bound, with what the kubelet or
// the scheduler says; "" when none.
func stuckPodsMessage(s State) string {
	var out []string
	for _, o := range sortedOrdinals(s.Pods) {
		if p := s.Pods[o]; podStuck(s, p) {
			msg := fmt.Sprintf("pod %s cannot start since %s (%s)", member.Name(s.Name, o),
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
	voting, healthy := votingCounts(s.Members)
	for _, m := range s.Members {
		if m.Ordinal == o && m.Healthy && !m.Learner {
			healthy--
		}
	}
	return voting > 1 && healthy >= quorum(voting)
}

// volumeNodeConflict is what the scheduler says of a node that the pod's volume cannot be used
// on (a local volume on another node).
const volumeNodeConflict = "volume node affinity conflict"

// stuckTerminatingMessage names the pods stuck terminating and says what only the user can do.
func stuckTerminatingMessage(s State) string {
	var out []string
	for _, o := range sortedOrdinals(s.Pods) {
		p := s.Pods[o]
		if !stuckTerminating(s, p) {
			continue
		}
		name := member.Name(s.Name, o)
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

// refusedByAPIServer reports whether err is the API server refusing an object for good until
// something changes (admission, quota, LimitRange, a missing PriorityClass, an invalid value),
// as opposed to a transient failure worth a quick retry; message is the API server's own.
func refusedByAPIServer(err error) (message string, refused bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return "", false
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		return "", false
	}
	return status.Status().Message, true
}

// refusedDecision turns a decision whose action the API server refused into one that reports
// the refusal: Degraded says PodRefused with the API server's message, and the pass does not
// try again before whileRefused.
func refusedDecision(d Decision, message string) Decision {
	return Decision{Blocked: api.ReasonPodRefused,
		Message: fmt.Sprintf("the API server refuses %s: %s", d.Message, message)}
}

// planCrashLooping is rule 5 for a voting member whose pod crash-loops past the bound: it is
// removed, only while the others keep a healthy majority, and then added again as a new
// member (its pod and claim, marked with the removed member, are replaced on the way).
//
// Only when the crash is the member's own: another healthy member runs a pod built from the
// same spec. Otherwise the crash may come from the spec (a value etcd refuses, a release that
// does not start), and replacing the member would wipe its data to add it again on that spec,
// to crash again: a pod rolled onto a spec the others are not on yet is the rollout's, which
// stops and says so (RolloutStuck), and a pod whose spec was set back since is rolled onto the
// current one, on its data (rule 8).
func planCrashLooping(s State) (Decision, bool) {
	for _, m := range sortedMembers(s.Members) {
		p, hasPod := s.Pods[m.Ordinal]
		if m.Learner || m.Healthy || !hasPod || p.Terminating || !podStuck(s, p) || p.Problem.Reason != ReasonCrashLoop {
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
