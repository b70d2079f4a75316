package cluster

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// rollMember deletes the pod of an out-of-date member (rule 8), through the Eviction API when
// the planner says that takes down a member that serves (evict), and records that the member
// is rolled, or, when the API server refuses the eviction, since when it has.
func (r *Reconciler) rollMember(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, evict bool, why string) (Result, error) {
	remove := r.control.DeletePod
	if evict {
		remove = r.control.EvictPod
	}
	res, err := remove(ctx, c, p, why)
	if err == nil && res.Changed {
		r.event(c, corev1.EventTypeNormal, EventMemberRolled, "Rolling member %s: %s", p.Name, why)
	}
	var refused *evictionRefused
	if errors.As(err, &refused) {
		r.recordEvictionRefusal(ctx, c, p, refused.message, why)
	}
	return res, err
}

// recordEvictionRefusal writes on pod p that the API server refuses to evict it (message):
// since now at the first refusal under the cluster's current spec, and again, keeping that
// time, only when the answer changes; a refusal like the one recorded writes nothing. The
// planner reports a refusal that lasts past the rollout's bound (plan_budget.go). A failed
// write is logged and left to the next refusal: the pass still waits, as refused.
// The EvictionRefused Event goes with the write, not with every refused pass: client-go's
// recorder drops an object's Events past a budget, and a rollout that waits minutes on a
// budget would spend it and lose the Events that follow (PodEvicted, MemberRolled).
func (r *Reconciler) recordEvictionRefusal(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, message, why string) {
	want := member.EvictionRefusal{Since: r.now().UTC().Truncate(time.Second), Generation: c.Generation, Message: message}
	if have, ok := member.ReadEvictionRefusal(p); ok && have.Generation == c.Generation {
		if have.Message == message {
			return
		}
		want.Since = have.Since
	}
	r.event(c, corev1.EventTypeNormal, EventEvictionRefused, "Eviction of pod %s refused for now, the rollout waits (%s): %s", p.Name, why, message)
	if err := r.control.AnnotatePod(ctx, p, member.AnnotationEvictionRefused, want.Encode()); err != nil {
		r.log(c).WithField("pod", p.Name).WithError(err).Warn("recording the eviction's refusal")
	}
}

// restartInPlace gives the etcd container of an out-of-date member pod the image the spec
// builds now (rule 8, when member.ImageChange says that is all that differs), with the new
// template hash and what tells the rollout when the kubelet has restarted the container. The
// change is conditioned on the pod's UID and resourceVersion: a pod replaced or changed since
// this pass observed it (its container restarted meanwhile, say) is left for the next pass.
func (r *Reconciler) restartInPlace(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, target member.Target, why string) (Result, error) {
	image, hash, ok := member.ImageChange(c, p, target, r.deps.MemberInitImage)
	if !ok {
		return Result{}, nil
	}
	from, _ := member.EtcdContainerID(p)
	return r.control.SetPodImage(ctx, c, p, podImage{Image: image, Hash: hash, RestartedFrom: from, At: r.now()}, why)
}

// patchPodMetadata patches a member pod's labels and annotations in place: those from
// spec.pod, and the operator's label that names its metrics port (member.MetadataPatchFor).
// The patch carries the pod's UID, so a pod replaced meanwhile is not patched.
func (r *Reconciler) patchPodMetadata(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod) (Result, error) {
	mp := member.MetadataPatchFor(c, p)
	if mp.Empty() {
		return Result{}, nil
	}
	return r.control.PatchPodMetadata(ctx, c, p, mp)
}

// etcdWaiting is why a member pod's etcd container is not running, as the kubelet says it
// (ImagePullBackOff, CrashLoopBackOff, with its message); empty when it runs.
func etcdWaiting(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != member.EtcdContainerName || cs.State.Waiting == nil || cs.State.Waiting.Reason == "" {
			continue
		}
		if cs.State.Waiting.Message != "" {
			return cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
		}
		return cs.State.Waiting.Reason
	}
	return ""
}
