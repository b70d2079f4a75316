package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ensureStorage fills in spec.storage when it is left out or names neither volume (a spec
// that sets only a retentionPolicy), so that what holds the members' data is written on the
// object, for the user to read and for every later pass to follow: a cluster that has already
// started (status, its recorded cluster ID or pods say so) was made before claims existed and keeps its emptyDir; a new
// one gets a claim per member. A retentionPolicy the user gave is kept. It reports whether it
// patched: the pass then ends, and the next one starts from the patched object.
func (r *Reconciler) ensureStorage(ctx context.Context, c *api.EtcdCluster) (bool, error) {
	given := c.Spec.Storage
	if given != nil && (given.EmptyDir != nil || given.VolumeClaimTemplate != nil) {
		return false, nil
	}
	storage := member.DefaultStorage()
	pods, err := r.deps.Pods.Pods(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return false, fmt.Errorf("listing pods: %w", err)
	}
	// status.size, or the etcd cluster ID recorded on the object (a status cleared), or a pod.
	started := c.Status.Size > 0 || recordedClusterID(c) != 0
	for _, p := range pods {
		started = started || metav1.IsControlledBy(p, c)
	}
	if started {
		storage = member.LegacyStorage()
	}
	if given != nil && given.RetentionPolicy != nil {
		storage.RetentionPolicy = given.RetentionPolicy
	}
	// The precondition on the UID keeps a patch from landing on a newer cluster of the name.
	if err := r.control.PatchClusterStorage(ctx, c, storage); err != nil {
		return false, fmt.Errorf("filling in spec.storage: %w", err)
	}
	kind := "a claim per member on the default StorageClass"
	if started {
		kind = "the emptyDir it was created with"
	}
	r.log(c).WithField("storage", kind).Info("filled in spec.storage")
	r.event(c, corev1.EventTypeNormal, EventStorageDefaulted, "spec.storage named no volume: members keep their data on %s", kind)
	return true, nil
}

// syncClaims keeps the claims' bookkeeping, before the pass plans anything: it clears the 3.7
// record of data that may run on an older release (clearDataRanOn), marks the claim of every
// listed member with the member's ID (once the member's pod uses it), takes back the removed
// flag of a member etcd still lists (unflagRemoved), records on its claim the newest etcd
// release its data has run on (recordDataRanOn), and writes the ID on the pod of every
// member that has started (member-init reads it from there). A claim is marked before
// any step that could remove its member, so a removed member's data is always recognized. A
// failed mark fails the pass: nothing is planned on an unmarked claim. (What becomes of the
// claims when the cluster is deleted: retention.go.)
func (r *Reconciler) syncClaims(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	if err := r.clearDataRanOn(ctx, o); err != nil {
		return err
	}
	for _, m := range o.members {
		v := o.memberView(m)
		if v.Ordinal < 0 {
			continue
		}
		pod, pvc := o.pods[v.Ordinal], o.claims[v.Ordinal]
		if pvc != nil && pvc.DeletionTimestamp == nil && pvc.Annotations[member.AnnotationMemberID] == "" &&
			pod != nil && member.DataClaim(pod) == pvc.Name {
			updated, err := r.control.AnnotateClaim(ctx, pvc, m.ID)
			if err != nil {
				return err
			}
			o.claims[v.Ordinal] = updated
		}
		if err := r.unflagRemoved(ctx, o, v.Ordinal, m.ID); err != nil {
			return err
		}
		if err := r.recordDataRanOn(ctx, o, m); err != nil {
			return err
		}
		if pod != nil && m.Name != "" && pod.DeletionTimestamp == nil && pod.Annotations[member.AnnotationMemberID] == "" {
			if err := r.control.AnnotatePod(ctx, pod, member.AnnotationMemberID, member.FormatID(m.ID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordDataRanOn records on member m's claim that its data has run on the etcd release m
// answers with, from 3.7 on (plan.DataRanOnToRecord says when, member.AnnotationDataRanOn
// why), before the pass plans from the claim: only when m answered, through the pod that
// mounts the claim, as the member the claim is marked with, and the claim records an older
// release or none. A claim that records it already is not written again.
func (r *Reconciler) recordDataRanOn(ctx context.Context, o *observation, m etcdutil.Member) error {
	v := o.memberView(m)
	if v.Ordinal < 0 || !v.Healthy || v.Learner {
		return nil
	}
	pod, pvc := o.pods[v.Ordinal], o.claims[v.Ordinal]
	if pod == nil || pvc == nil || pod.DeletionTimestamp != nil || pvc.DeletionTimestamp != nil ||
		member.DataClaim(pod) != pvc.Name || member.ParseID(pvc.Annotations[member.AnnotationMemberID]) != m.ID {
		return nil
	}
	release := plan.DataRanOnToRecord(o.statuses[v.Ordinal], pvc.Annotations[member.AnnotationDataRanOn])
	if release == "" {
		return nil
	}
	updated, err := r.control.SetClaimAnnotation(ctx, pvc, member.AnnotationDataRanOn, release)
	if err != nil {
		return err
	}
	o.claims[v.Ordinal] = updated
	return nil
}

// clearDataRanOn clears the record that a claim's data has run on 3.7
// (member.AnnotationDataRanOn) when the pass builds member pods with a release older than 3.6,
// or the pod that mounts the claim is built with one, or its member answers with one
// (plan.DataRanOnToClear says why that is enough): that data may hold entries 3.7 cannot
// replay, and its member is replaced on its next way up to 3.7. Done before the pass plans,
// whether or not etcd lists the members; a failed write fails the pass.
func (r *Reconciler) clearDataRanOn(ctx context.Context, o *observation) error {
	target := o.memberVersion()
	for _, ord := range plan.SortedOrdinals(o.claims) {
		pvc := o.claims[ord]
		recorded := pvc.Annotations[member.AnnotationDataRanOn]
		if recorded == "" || pvc.DeletionTimestamp != nil {
			continue
		}
		var built, answered string
		if pod := o.pods[ord]; pod != nil && member.DataClaim(pod) == pvc.Name {
			if t, ok := member.ReadTemplate(o.cluster.Name, pod); ok {
				built = t.Version
			}
			answered = o.statuses[ord].Version
		}
		if !plan.DataRanOnToClear(recorded, target, built, answered) {
			continue
		}
		updated, err := r.control.SetClaimAnnotation(ctx, pvc, member.AnnotationDataRanOn, "")
		if err != nil {
			return fmt.Errorf("clearing the record that claim %s ran on %s: %w", pvc.Name, recorded, err)
		}
		o.claims[ord] = updated
	}
	return nil
}

// unflagRemoved removes the removed flag (member.AnnotationRemoved) from the claim at ordinal
// when it flags member id and etcd's member list, a linearizable read, lists that member: the
// removal the flag was written for never happened (the operator killed between the flag and
// the removal, and the removal no longer wanted; or a survivor named to recover from, then
// another named in its place). Every step that removes a member, or drops it with
// --force-new-cluster, writes the flag again first (flagRemoved), in the pass that takes it.
func (r *Reconciler) unflagRemoved(ctx context.Context, o *observation, ordinal int, id uint64) error {
	pvc := o.claims[ordinal]
	if pvc == nil || pvc.DeletionTimestamp != nil || member.ParseID(pvc.Annotations[member.AnnotationMemberID]) != id ||
		!removedFlagged(pvc) {
		return nil
	}
	updated, err := r.control.SetClaimAnnotation(ctx, pvc, member.AnnotationRemoved, "")
	if err != nil {
		return fmt.Errorf("taking back the removed flag of member %s, which etcd lists, on claim %s: %w",
			member.FormatID(id), pvc.Name, err)
	}
	o.claims[ordinal] = updated
	return nil
}

// flagRemoved flags the claim at ordinal, marked with member id, as that member's removed
// (member.AnnotationRemoved), before the member is removed from etcd or dropped by a
// survivor's --force-new-cluster: a pass without a member list then never counts it as a
// member that status may have missed (plan_quorum_members.go). Written before the step, so
// that an operator killed between the two, or a status write of the pass that made it lost,
// leaves the flag; a step that then fails leaves a member flagged that status lists, and a
// listed member is counted whatever its claim says. A claim flagged already, gone, or marked
// with another member is left alone.
func (r *Reconciler) flagRemoved(ctx context.Context, o *observation, ordinal int, id uint64) error {
	pvc := o.claims[ordinal]
	if pvc == nil || pvc.DeletionTimestamp != nil || id == 0 ||
		member.ParseID(pvc.Annotations[member.AnnotationMemberID]) != id || removedFlagged(pvc) {
		return nil
	}
	updated, err := r.control.SetClaimAnnotation(ctx, pvc, member.AnnotationRemoved, member.FormatID(id))
	if err != nil {
		return fmt.Errorf("flagging the claim of member %s as removed: %w", member.Name(o.cluster.Name, ordinal), err)
	}
	o.claims[ordinal] = updated
	return nil
}
