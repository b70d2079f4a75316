package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// claimProblemAfter is how long a claim may wait for a volume before the pass asks its Events
// why: provisioning a volume normally takes a few seconds, and asking costs an API call.
const claimProblemAfter = 10 * time.Second

// ensureStorage fills in spec.storage when it is left out, so that what holds the members'
// data is written on the object, for the user to read and for every later pass to follow: a
// cluster that has already started (status or pods say so) was made before claims existed
// and keeps its emptyDir; a new one gets a claim per member. It reports whether it patched:
// the pass then ends, and the next one starts from the patched object.
func (r *Reconciler) ensureStorage(ctx context.Context, c *api.EtcdCluster) (bool, error) {
	if c.Spec.Storage != nil {
		return false, nil
	}
	storage := member.DefaultStorage()
	pods, err := r.deps.Pods.Pods(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return false, fmt.Errorf("listing pods: %w", err)
	}
	started := c.Status.Size > 0
	for _, p := range pods {
		started = started || metav1.IsControlledBy(p, c)
	}
	if started {
		storage = member.LegacyStorage()
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"storage": storage}})
	if err != nil {
		return false, fmt.Errorf("encoding the storage patch: %w", err)
	}
	// The precondition on the UID keeps a patch from landing on a newer cluster of the name.
	patch, err = withUID(patch, c.UID)
	if err != nil {
		return false, err
	}
	_, err = r.deps.Clientset.EtcdV1alpha1().EtcdClusters(c.Namespace).Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return false, fmt.Errorf("filling in spec.storage: %w", err)
	}
	kind := "a claim per member on the default StorageClass"
	if started {
		kind = "the emptyDir it was created with"
	}
	r.log(c).WithField("storage", kind).Info("filled in spec.storage")
	r.event(c, corev1.EventTypeNormal, EventStorageDefaulted, "spec.storage was left out: members keep their data on %s", kind)
	return true, nil
}

// withUID adds metadata.uid to a merge patch: the API server refuses the patch with a
// conflict when the object's UID differs.
func withUID(patch []byte, uid types.UID) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("decoding patch: %w", err)
	}
	m["metadata"] = map[string]any{"uid": uid}
	return json.Marshal(m)
}

// observeClaims reads the cluster's member claims from the cache: those named and labelled
// for one of its members, controlled by the cluster or by nobody. For a claim that has waited
// long for a volume, it asks the claim's Events why.
func (r *Reconciler) observeClaims(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	claims, err := r.deps.Claims.PersistentVolumeClaims(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return fmt.Errorf("listing claims: %w", err)
	}
	for _, pvc := range claims {
		name, ok := strings.CutPrefix(pvc.Name, "data-")
		if !ok {
			continue
		}
		ord, ok := member.Ordinal(c.Name, name)
		switch {
		case !ok || pvc.Name != member.ClaimName(c.Name, ord):
		case claimIsOurs(c, pvc):
			o.claims[ord] = pvc
		default:
			// Another controller's claim of a member's name: a member pod would mount it.
			o.foreign = append(o.foreign, foreignObject(plan.ForeignClaim, pvc, ord))
		}
	}
	for ord, pvc := range o.claims {
		if pvc.Status.Phase == corev1.ClaimBound || pvc.DeletionTimestamp != nil ||
			time.Since(pvc.CreationTimestamp.Time) < claimProblemAfter {
			continue
		}
		if problem := r.claimProblem(ctx, pvc); problem != "" {
			if o.claimProblems == nil {
				o.claimProblems = map[int]string{}
			}
			o.claimProblems[ord] = problem
		}
	}
	return nil
}

// claimProblem is why the claim waits, from its Events (claimWhy); "" when they say nothing
// or cannot be read: the claim is then reported as waiting, without why.
func (r *Reconciler) claimProblem(ctx context.Context, pvc *corev1.PersistentVolumeClaim) string {
	events, err := r.deps.Kube.CoreV1().Events(pvc.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{
			"involvedObject.kind": "PersistentVolumeClaim",
			"involvedObject.name": pvc.Name,
			"involvedObject.uid":  string(pvc.UID),
		}.String()})
	if err != nil {
		r.deps.Log.WithField("claim", pvc.Namespace+"/"+pvc.Name).WithError(err).Debug("reading the claim's events")
		return ""
	}
	return claimWhy(events.Items, r.now())
}

// claimWhy is the reason and message of a waiting claim's latest Warning Event (a
// StorageClass that does not exist, a provisioner that fails), else of its latest Normal one
// that has been said for the pods' bound by now (first said that long ago: a wait that is
// only slow is said for a moment): some waits that last are only Normal (FailedBinding: no
// StorageClass is set and none is the default; ExternalProvisioning: the provisioner has not
// answered). WaitForFirstConsumer is left out: that claim waits for its pod to be
// scheduled, which the pod's own condition explains.
func claimWhy(events []corev1.Event, now time.Time) string {
	var warning, normal *corev1.Event
	for i := range events {
		e := &events[i]
		latest := &normal
		switch {
		case e.Type == corev1.EventTypeWarning:
			latest = &warning
		case e.Reason == "WaitForFirstConsumer" || now.Sub(eventFirstTime(e)) < plan.StuckAfter:
			continue
		}
		if *latest == nil || eventTime(e).After(eventTime(*latest)) {
			*latest = e
		}
	}
	for _, e := range []*corev1.Event{warning, normal} {
		if e != nil {
			return e.Reason + ": " + e.Message
		}
	}
	return ""
}

// eventFirstTime is when the event was first said.
func eventFirstTime(e *corev1.Event) time.Time {
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	return e.EventTime.Time
}

func eventTime(e *corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// claimViews turns the observed claims into the planner's view.
func (o *observation) claimViews() map[int]plan.ClaimView {
	c := o.cluster
	out := map[int]plan.ClaimView{}
	for ord, pvc := range o.claims {
		bound := pvc.Status.Phase == corev1.ClaimBound
		out[ord] = plan.ClaimView{
			Ordinal:     ord,
			Terminating: pvc.DeletionTimestamp != nil,
			Bound:       bound,
			Outdated:    !bound && (!member.HasClaims(&c.Spec) || !member.ClaimMatches(c, pvc)),
			MemberID:    member.ParseID(pvc.Annotations[member.AnnotationMemberID]),
			Problem:     o.claimProblems[ord],
		}
	}
	return out
}

// dataLost reports whether member-init refused to start the pod's etcd because the member's
// data dir is empty while the member has started before.
func dataLost(p *corev1.Pod) bool {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name != member.EtcdContainerName {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if t != nil && memberinit.IsDataLostMessage(t.Message) {
				return true
			}
		}
	}
	return false
}

// syncClaims keeps the claims' bookkeeping, before the pass plans anything: it marks the claim
// of every listed member with the member's ID (once the member's pod uses it), writes the ID
// on the pod of every member that has started (member-init reads it from there), and sets or
// drops the cluster's ownership of its claims as whenDeleted says. A claim is marked before
// any step that could remove its member, so a removed member's data is always recognized. A
// failed mark fails the pass: nothing is planned on an unmarked claim.
func (r *Reconciler) syncClaims(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	for _, m := range o.members {
		v := o.memberView(m)
		if v.Ordinal < 0 {
			continue
		}
		pod, pvc := o.pods[v.Ordinal], o.claims[v.Ordinal]
		if pvc != nil && pvc.DeletionTimestamp == nil && pvc.Annotations[member.AnnotationMemberID] == "" &&
			pod != nil && member.DataClaim(pod) == pvc.Name {
			updated, err := r.annotateClaim(ctx, pvc, m.ID)
			if err != nil {
				return err
			}
			o.claims[v.Ordinal] = updated
		}
		if pod != nil && m.Name != "" && pod.DeletionTimestamp == nil && pod.Annotations[member.AnnotationMemberID] == "" {
			patch := annotationPatch(member.AnnotationMemberID, member.FormatID(m.ID), pod.UID)
			if _, err := r.deps.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("writing the member ID on pod %s: %w", pod.Name, err)
			}
		}
	}
	owned := member.Retention(&c.Spec).WhenDeleted == api.RetentionDelete
	for ord, pvc := range o.claims {
		if metav1.IsControlledBy(pvc, c) == owned || pvc.DeletionTimestamp != nil {
			continue
		}
		if o.hasForeign(plan.ForeignPod, ord) {
			// Mounted by a pod that is not the cluster's: its ownership is not the
			// cluster's to set (a cluster deleted with the claim's new owner would take
			// the claim from under that pod).
			continue
		}
		if err := r.setClaimOwner(ctx, c, pvc, owned); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) annotateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, id uint64) (*corev1.PersistentVolumeClaim, error) {
	patch := annotationPatch(member.AnnotationMemberID, member.FormatID(id), pvc.UID)
	updated, err := r.deps.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("marking claim %s with member %s: %w", pvc.Name, member.FormatID(id), err)
	}
	r.deps.Log.WithFields(map[string]any{"claim": pvc.Namespace + "/" + pvc.Name, "id": member.FormatID(id)}).
		Info("marked claim with its member")
	return updated, nil
}

// setClaimOwner makes the cluster the claim's controlling owner (whenDeleted Delete: the
// claim goes with the cluster) or drops it (Retain).
func (r *Reconciler) setClaimOwner(ctx context.Context, c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim, owned bool) error {
	refs := slices.DeleteFunc(slices.Clone(pvc.OwnerReferences), func(ref metav1.OwnerReference) bool {
		return ref.UID == c.UID || (ref.Controller != nil && *ref.Controller)
	})
	if owned {
		refs = append(refs, member.OwnerReference(c))
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": pvc.UID}})
	if err != nil {
		return fmt.Errorf("encoding owner patch: %w", err)
	}
	_, err = r.deps.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the owner of claim %s: %w", pvc.Name, err)
	}
	return nil
}

// annotationPatch sets one annotation, on the object with the given UID only.
func annotationPatch(key, value string, uid types.UID) []byte {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": uid, "annotations": map[string]string{key: value}}})
	return patch
}
