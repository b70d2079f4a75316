package cluster

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Why a member pod does not start, read from the pod alone for the planner's PodView.Problem
// (the bound and what the planner does about it: plan/stuck.go).

// cannotStart are the kubelet's waiting reasons of a container that will not start by
// waiting a little: the image, the container's configuration, or the container itself.
var cannotStart = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	plan.ReasonCrashLoop: true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// maxProblemMessage bounds what a pod's message adds to a condition: a termination message
// may hold the tail of etcd's log.
const maxProblemMessage = 300

// podProblem reads why the pod does not start, or nil. A crash-looping etcd container
// (crashloop.go: restarts since it was last ready) is reported as such whether it waits for
// its next restart or briefly runs; a container restarted fewer times since, after a node
// reboot say, is not a problem.
func podProblem(p *corev1.Pod) *plan.PodProblem {
	if p.DeletionTimestamp != nil {
		return nil
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &plan.PodProblem{Reason: c.Reason, Message: clip(c.Message), Since: since(c.LastTransitionTime.Time, p)}
		}
	}
	if st := etcdStatus(p); st != nil && crashLooping(p, st) {
		return &plan.PodProblem{Reason: plan.ReasonCrashLoop, Message: crashLoopMessage(p, st), Since: notReadySince(p),
			Exited: lastExit(st)}
	}
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if st.Name == member.EtcdContainerName && st.State.Waiting != nil && st.State.Waiting.Reason == plan.ReasonCrashLoop &&
			restartsSinceReady(p, &st) < crashLoopRestarts {
			// etcd failed once or twice since it was last ready: its peers may just be
			// coming back, its node may have rebooted.
			continue
		}
		if w := st.State.Waiting; w != nil && cannotStart[w.Reason] {
			msg := fmt.Sprintf("container %s: %s", st.Name, w.Message)
			if t := st.LastTerminationState.Terminated; w.Reason == plan.ReasonCrashLoop && t != nil && strings.TrimSpace(t.Message) != "" {
				msg = exitMessage(st.Name, t)
			}
			return &plan.PodProblem{Reason: w.Reason, Message: clip(msg), Since: notReadySince(p)}
		}
	}
	for _, st := range p.Status.InitContainerStatuses {
		// Kubelets that keep a failed init container's terminated state through its back-off
		// (not CrashLoopBackOff) would otherwise leave the pod's trouble unseen until the
		// next restart: the pod cannot go on until the init container succeeds.
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
			return &plan.PodProblem{Reason: plan.ReasonCrashLoop, Message: clip(exitMessage(st.Name, t)), Since: notReadySince(p)}
		}
	}
	return nil
}

// exitMessage is why a container exited (an init container's refusal to fetch a snapshot, say):
// what to act on, not the back-off.
func exitMessage(name string, t *corev1.ContainerStateTerminated) string {
	msg := fmt.Sprintf("container %s exited with code %d", name, t.ExitCode)
	if m := strings.TrimSpace(t.Message); m != "" {
		msg += ": " + clipHead(m, maxProblemMessage-len(msg)-len(": "))
	}
	return msg
}

// crashLoopMessage is what the kubelet says of a crash-looping etcd container: how often it
// restarted since it was last ready, and its last exit, with the end of its log.
func crashLoopMessage(p *corev1.Pod, st *corev1.ContainerStatus) string {
	t := st.LastTerminationState.Terminated
	msg := fmt.Sprintf("container %s restarted %d times since it was last ready, last exit code %d", st.Name,
		restartsSinceReady(p, st), t.ExitCode)
	if m := strings.TrimSpace(t.Message); m != "" {
		// The message is the tail of the container's log: its last words (why etcd
		// exited) are at the end, so the end is what is kept.
		msg += ": " + clipHead(m, maxProblemMessage-len(msg)-len(": ..."))
	} else if t.Reason != "" {
		msg += " (" + t.Reason + ")"
	}
	return clip(msg)
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
