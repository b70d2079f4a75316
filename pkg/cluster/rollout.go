package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Events of a rollout.
const (
	// EventMemberRolled: an out-of-date member's pod was deleted, for the member to come back
	// on the current version and template.
	EventMemberRolled EventReason = "MemberRolled"
	// EventPodPatched: a member pod's labels and annotations from spec.pod were updated in
	// place.
	EventPodPatched EventReason = "PodPatched"
)

// rollMember deletes the pod of an out-of-date member (rule 8), and records that the member is
// rolled.
func (r *Reconciler) rollMember(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, why string) (Result, error) {
	res, err := r.control.DeletePod(ctx, c, p, why)
	if err == nil && res.Changed {
		r.event(c, corev1.EventTypeNormal, EventMemberRolled, "Rolling member %s: %s", p.Name, why)
	}
	return res, err
}

// restartInPlace gives the etcd container of an out-of-date member pod the image the spec
// builds now (rule 8, when member.ImageChange says that is all that differs), with the new
// template hash and what tells the rollout when the kubelet has restarted the container. The
// patch carries the pod's UID and resourceVersion: a pod replaced or changed since this pass
// observed it (its container restarted meanwhile, say) is left for the next pass.
func (r *Reconciler) restartInPlace(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, version, why string) (Result, error) {
	image, hash, ok := member.ImageChange(c, p, version, r.deps.MemberInitImage)
	if !ok {
		return Result{}, nil
	}
	from, _ := member.EtcdContainerID(p)
	applied, err := r.patchPod(ctx, p, "changing the image of", map[string]any{
		"metadata": map[string]any{
			"uid": p.UID, "resourceVersion": p.ResourceVersion,
			"annotations": map[string]string{
				member.AnnotationTemplateHash:  hash,
				member.AnnotationRestartedFrom: from,
				member.AnnotationRestartedAt:   r.now().UTC().Format(time.RFC3339),
			},
		},
		"spec": map[string]any{"containers": []map[string]string{{"name": member.EtcdContainerName, "image": image}}},
	})
	if !applied {
		return Result{}, err
	}
	r.log(c).WithField("member", p.Name).WithField("action", string(plan.ActionRestartInPlace)).WithField("image", image).Info("changed the etcd image in place")
	r.event(c, corev1.EventTypeNormal, EventMemberRolled, "Rolling member %s in place: %s", p.Name, why)
	return Result{Changed: true}, nil
}

// patchPodMetadata patches a member pod's labels and annotations from spec.pod in place. The
// patch carries the pod's UID, so a pod replaced meanwhile is not patched.
func (r *Reconciler) patchPodMetadata(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod) (Result, error) {
	mp := member.PolicyMetadataPatch(c, p)
	if mp.Empty() {
		return Result{}, nil
	}
	applied, err := r.patchPod(ctx, p, "patching", map[string]any{"metadata": map[string]any{
		"uid": p.UID, "labels": mp.Labels, "annotations": mp.Annotations}})
	if !applied {
		return Result{}, err
	}
	r.log(c).WithField("member", p.Name).WithField("action", string(plan.ActionPatchPod)).Info("patched pod labels and annotations")
	r.event(c, corev1.EventTypeNormal, EventPodPatched, "Patched the labels and annotations of pod %s from spec.pod", p.Name)
	return Result{Changed: true}, nil
}

// patchPod applies a strategic merge patch to member pod p; what says what the patch does, for
// the error. applied is false, with no error, when p is gone or changed since it was observed
// (the patch's preconditions): the next pass sees it as it is now.
func (r *Reconciler) patchPod(ctx context.Context, p *corev1.Pod, what string, patch map[string]any) (applied bool, err error) {
	body, err := json.Marshal(patch)
	if err != nil {
		return false, fmt.Errorf("encoding the patch of pod %s: %w", p.Name, err)
	}
	_, err = r.deps.Kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s pod %s: %w", what, p.Name, err)
	}
	return true, nil
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
