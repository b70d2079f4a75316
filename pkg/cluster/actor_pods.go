package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The actor's writes of member pods and claims.

func (m *realActor) CreatePod(ctx context.Context, c *api.EtcdCluster, t member.Template, why string) (Result, error) {
	name := member.Name(c.Name, t.Ordinal)
	claimed := false
	if member.HasClaims(&c.Spec) {
		var err error
		if claimed, err = m.CreateClaim(ctx, c, t.Ordinal); err != nil {
			return Result{}, err
		}
	}
	_, err := m.kube.CoreV1().Pods(c.Namespace).Create(ctx, member.Pod(c, t, m.initImage), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier pass, or someone else's pod of the member's name: the latter
		// is never taken as created.
		have, err := m.kube.CoreV1().Pods(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return Result{}, fmt.Errorf("getting pod %s: %w", name, err)
		}
		if !metav1.IsControlledBy(have, c) {
			return Result{}, fmt.Errorf("creating pod %s: %w", name, &foreignError{obj: foreignObject(plan.ForeignPod, have, t.Ordinal)})
		}
		return Result{Changed: claimed}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("creating pod %s: %w", name, err)
	}
	m.logFor(c, name, plan.ActionCreatePod).WithField("clusterState", t.ClusterState).Info("created member pod")
	m.event(c, corev1.EventTypeNormal, EventPodCreated, "Created pod %s (%s)", name, why)
	return Result{Changed: true}, nil
}

func (m *realActor) CreateClaim(ctx context.Context, c *api.EtcdCluster, ordinal int) (bool, error) {
	name := member.Name(c.Name, ordinal)
	pvc := member.Claim(c, ordinal)
	_, err := m.kube.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Used as it is only when it is the cluster's (a retained claim included).
		have, err := m.kube.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("getting claim %s: %w", pvc.Name, err)
		}
		if !claimIsOurs(c, have) {
			return false, fmt.Errorf("creating pod %s: %w", name, &foreignError{obj: foreignObject(plan.ForeignClaim, have, ordinal)})
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("creating claim %s: %w", pvc.Name, err)
	}
	m.logFor(c, name, plan.ActionCreatePod).WithField("claim", pvc.Name).Info("created member claim")
	m.event(c, corev1.EventTypeNormal, EventClaimCreated, "Created claim %s for member %s", pvc.Name, name)
	return true, nil
}

func (m *realActor) DeletePod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, why string) (Result, error) {
	return m.deleteObject(c, "pod", pod.Name, plan.ActionDeletePod, EventPodDeleted, why,
		m.kube.CoreV1().Pods(c.Namespace).Delete(ctx, pod.Name, uidPrecondition(pod.UID)))
}

func (m *realActor) DeleteClaim(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, why string) (Result, error) {
	return m.deleteObject(c, "claim", pvc.Name, plan.ActionDeleteClaim, EventClaimDeleted, why,
		m.kube.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(ctx, pvc.Name, uidPrecondition(pvc.UID)))
}

// uidPrecondition deletes only the object with that UID: a newer one of the same name is
// left alone.
func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// deleteObject judges the answer err to deleting the named object: gone already, or replaced
// by a newer one (the UID precondition failed), is done; a deletion is logged and recorded.
func (m *realActor) deleteObject(c *api.EtcdCluster, kind, name string, a plan.ActionKind, reason EventReason, why string, err error) (Result, error) {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("deleting %s %s: %w", kind, name, err)
	}
	m.logFor(c, name, a).Infof("deleted member %s", kind)
	m.event(c, corev1.EventTypeNormal, reason, "Deleted %s %s (%s)", kind, name, why)
	return Result{Changed: true}, nil
}

func (m *realActor) SetPodImage(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, change podImage, why string) (Result, error) {
	patch := patchOf(p.UID).asRead(p.ResourceVersion).annotations(map[string]*string{
		member.AnnotationTemplateHash:  &change.Hash,
		member.AnnotationRestartedFrom: &change.RestartedFrom,
		member.AnnotationRestartedAt:   ptrTo(change.At.UTC().Format(time.RFC3339)),
	}).spec(podSpecPatch{Containers: []containerImage{{Name: member.EtcdContainerName, Image: change.Image}}})
	applied, err := m.patchPod(ctx, p, "changing the image of", patch)
	if !applied {
		return Result{}, err
	}
	m.logFor(c, p.Name, plan.ActionRestartInPlace).WithField("image", change.Image).Info("changed the etcd image in place")
	m.event(c, corev1.EventTypeNormal, EventMemberRolled, "Rolling member %s in place: %s", p.Name, why)
	return Result{Changed: true}, nil
}

func (m *realActor) PatchPodMetadata(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod, mp member.MetadataPatch) (Result, error) {
	applied, err := m.patchPod(ctx, p, "patching", patchOf(p.UID).metadata(mp))
	if !applied {
		return Result{}, err
	}
	m.logFor(c, p.Name, plan.ActionPatchPod).Info("patched pod labels and annotations")
	m.event(c, corev1.EventTypeNormal, EventPodPatched, "Patched the labels and annotations of pod %s", p.Name)
	return Result{Changed: true}, nil
}

// patchPod applies a strategic merge patch to member pod p; what says what the patch does, for
// the error. applied is false, with no error, when p is gone or changed since it was observed
// (the patch's preconditions): the next pass sees it as it is now.
func (m *realActor) patchPod(ctx context.Context, p *corev1.Pod, what string, patch *objectPatch) (applied bool, err error) {
	body, err := patch.encode()
	if err != nil {
		return false, fmt.Errorf("%s pod %s: %w", what, p.Name, err)
	}
	_, err = m.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s pod %s: %w", what, p.Name, err)
	}
	return true, nil
}

func (m *realActor) AnnotatePod(ctx context.Context, pod *corev1.Pod, key, value string) error {
	body, err := patchOf(pod.UID).annotate(key, value).encode()
	if err == nil {
		_, err = m.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("writing the annotation %s on pod %s: %w", key, pod.Name, err)
	}
	return nil
}

func (m *realActor) AdoptPod(ctx context.Context, c *api.EtcdCluster, p *corev1.Pod) (*corev1.Pod, error) {
	refs := append(slices.Clone(p.OwnerReferences), member.OwnerReference(c))
	body, err := patchOf(p.UID).asRead(p.ResourceVersion).owners(refs).encode()
	if err != nil {
		return nil, fmt.Errorf("adopting pod %s: %w", p.Name, err)
	}
	adopted, err := m.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("adopting pod %s: %w", p.Name, err)
	}
	m.clusterLog(c).WithField("pod", p.Name).Info("adopted member pod")
	m.event(c, corev1.EventTypeNormal, EventPodAdopted, "Adopted pod %s: it carries this cluster's labels and token and had no controller", p.Name)
	return adopted, nil
}

func (m *realActor) AnnotateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, id uint64) (*corev1.PersistentVolumeClaim, error) {
	body, err := patchOf(pvc.UID).annotate(member.AnnotationMemberID, member.FormatID(id)).encode()
	var updated *corev1.PersistentVolumeClaim
	if err == nil {
		updated, err = m.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("marking claim %s with member %s: %w", pvc.Name, member.FormatID(id), err)
	}
	m.log.WithFields(map[string]any{"claim": pvc.Namespace + "/" + pvc.Name, "id": member.FormatID(id)}).
		Info("marked claim with its member")
	return updated, nil
}

func (m *realActor) SetClaimAnnotation(ctx context.Context, pvc *corev1.PersistentVolumeClaim, key, value string) (*corev1.PersistentVolumeClaim, error) {
	patch := patchOf(pvc.UID).annotate(key, value)
	if value == "" {
		patch = patchOf(pvc.UID).unannotate(key)
	}
	body, err := patch.encode()
	var updated *corev1.PersistentVolumeClaim
	if err == nil {
		updated, err = m.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("writing the annotation %s=%s on claim %s: %w", key, value, pvc.Name, err)
	}
	m.log.WithFields(map[string]any{"claim": pvc.Namespace + "/" + pvc.Name, "annotation": key, "value": value}).
		Info("annotated claim")
	return updated, nil
}

func (m *realActor) DisownClaim(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim) error {
	refs := slices.DeleteFunc(slices.Clone(pvc.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == c.UID })
	body, err := patchOf(pvc.UID).asRead(pvc.ResourceVersion).owners(refs).encode()
	if err == nil {
		_, err = m.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("dropping the cluster from the owners of claim %s: %w", pvc.Name, err)
	}
	m.clusterLog(c).WithField("claim", pvc.Name).Info("claim no longer owned by the cluster: whenDeleted alone decides what becomes of it")
	return nil
}

func ptrTo[T any](v T) *T { return &v }
