package cluster

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A crash loop is judged on the current run of trouble, never on the pod's lifetime. The
// kubelet keeps only a lifetime restart count and the last termination, and a member pod
// lives for months: a node patched three times has restarted its etcd three times, and the
// reboot itself ends the last run with exit code 255. So the operator records, on the pod, the
// etcd container's restart count when it last saw the container ready
// (member.AnnotationReadyRestarts), and counts only the restarts beyond it. A member pod is
// made with 0 (a pod that never became ready counts from its first run); a pod made without
// it (by an earlier operator) counts from when this one first saw it. The planner then also
// waits for etcd to have stayed down for the bound (PodProblem.Exited): a container running
// again is etcd starting, not a crash loop to act on.

// crashLoopRestarts is how often etcd's container must have failed since it was last ready to
// count as crash-looping: a member that failed once or twice while its peers came back is not.
const crashLoopRestarts = 3

// readyRestarts is the etcd container's restart count when the operator last saw it ready; a
// pod without a readable record counts from now.
func readyRestarts(p *corev1.Pod, st *corev1.ContainerStatus) int32 {
	n, err := strconv.ParseInt(p.Annotations[member.AnnotationReadyRestarts], 10, 32)
	if err != nil || n < 0 {
		return st.RestartCount
	}
	return int32(n)
}

// restartsSinceReady is how often the etcd container restarted since the operator last saw it
// ready.
func restartsSinceReady(p *corev1.Pod, st *corev1.ContainerStatus) int32 {
	return max(0, st.RestartCount-readyRestarts(p, st))
}

// crashLooping: the etcd container failed crashLoopRestarts times or more since it was last
// ready, its last run ended in an error, it is not ready now, and the kubelet holds it in
// back-off, or it briefly runs or has just exited again. A container the kubelet brings up
// for another reason (PodInitializing, ContainerCreating: a node that restarted the pod's
// sandbox) is not in a loop.
func crashLooping(p *corev1.Pod, st *corev1.ContainerStatus) bool {
	t := st.LastTerminationState.Terminated
	if st.Ready || t == nil || t.ExitCode == 0 || restartsSinceReady(p, st) < crashLoopRestarts {
		return false
	}
	w := st.State.Waiting
	return w == nil || w.Reason == plan.ReasonCrashLoop
}

// lastExit is when the etcd container's last run ended: zero while it runs (etcd is starting),
// and when the kubelet does not say.
func lastExit(st *corev1.ContainerStatus) time.Time {
	switch {
	case st.State.Running != nil:
		return time.Time{}
	case st.State.Terminated != nil:
		return st.State.Terminated.FinishedAt.Time
	case st.LastTerminationState.Terminated != nil:
		return st.LastTerminationState.Terminated.FinishedAt.Time
	}
	return time.Time{}
}

// readyRestartsToRecord is the value of AnnotationReadyRestarts pod p should carry, and
// whether it differs from what it carries: the restart count of an etcd container that is
// ready, or of one first seen (no readable record). Nothing for a pod going or without an
// etcd container status, or a record to keep (the container is not ready).
func readyRestartsToRecord(p *corev1.Pod) (string, bool) {
	st := etcdStatus(p)
	if p.DeletionTimestamp != nil || st == nil {
		return "", false
	}
	have := p.Annotations[member.AnnotationReadyRestarts]
	n, err := strconv.ParseInt(have, 10, 32)
	readable := err == nil && n >= 0
	want := strconv.Itoa(int(st.RestartCount))
	if have == want || (readable && !st.Ready) {
		return "", false
	}
	return want, true
}

// recordReadyRestarts writes AnnotationReadyRestarts on the member pods whose record is due
// (readyRestartsToRecord), through the actor, and puts it on the pass's copies, so that the
// pass reads the count it wrote. A pass where no ready container restarted writes nothing. A
// record lost (a failed or dropped write) is written again by a later pass, from a count no
// lower: it can delay a crash loop's verdict, never bring one about.
func (r *Reconciler) recordReadyRestarts(ctx context.Context, o *observation) error {
	for _, ord := range slices.Sorted(maps.Keys(o.pods)) {
		p := o.pods[ord]
		want, due := readyRestartsToRecord(p)
		if !due {
			continue
		}
		if err := r.control.AnnotatePod(ctx, p, member.AnnotationReadyRestarts, want); err != nil {
			return err
		}
		r.log(o.cluster).WithField("pod", p.Name).WithField("restarts", want).
			Debug("recorded the etcd container's restart count as of its last ready run")
		p = p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[member.AnnotationReadyRestarts] = want
		o.pods[ord] = p
	}
	return nil
}
