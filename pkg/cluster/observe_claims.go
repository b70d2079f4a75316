package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// claimProblemAfter is how long a claim may wait for a volume before the pass asks its Events
// why: provisioning a volume normally takes a few seconds, and asking costs an API call.
const claimProblemAfter = 10 * time.Second

// observeClaims reads the cluster's member claims from the cache: those named and labelled
// for one of its members, controlled by the cluster or by nobody. For a claim that has waited
// long for a volume, it asks the claim's Events why.
func (r *Reconciler) observeClaims(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	claims, err := r.deps.Claims.PersistentVolumeClaims(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return fmt.Errorf("listing claims: %w", err)
	}
	for _, pvc := range claims {
		ord, ok := claimOrdinal(c, pvc)
		switch {
		case !ok:
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

// claimOrdinal is the ordinal of the member whose claim's name pvc has; ok is false for a
// claim of any other name.
func claimOrdinal(c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim) (int, bool) {
	name, ok := strings.CutPrefix(pvc.Name, "data-")
	if !ok {
		return 0, false
	}
	ord, ok := member.Ordinal(c.Name, name)
	return ord, ok && pvc.Name == member.ClaimName(c.Name, ord)
}

// claimProblem is why the claim waits, from its Events (claimWhy); "" when they say nothing
// or cannot be read: the claim is then reported as waiting, without why.
func (r *Reconciler) claimProblem(ctx context.Context, pvc *corev1.PersistentVolumeClaim) string {
	events, err := r.deps.KubeClient.CoreV1().Events(pvc.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{
			"involvedObject.kind": "PersistentVolumeClaim",
			"involvedObject.name": pvc.Name,
			"involvedObject.uid":  string(pvc.UID),
		}.String()})
	if err != nil {
		r.deps.Log.WithField("claim", pvc.Namespace+"/"+pvc.Name).WithError(err).Debug("reading the claim's events")
		return ""
	}
	return claimWhy(events.Items, r.now(), r.deps.Bounds.WithDefaults().StuckAfter)
}

// waitsForPod are the Normal reasons of a claim that waits for its pod to be scheduled
// (volume binding mode WaitForFirstConsumer), not for a volume.
var waitsForPod = map[string]bool{"WaitForFirstConsumer": true, "WaitForPodScheduled": true}

// claimWhy is the reason and message of a waiting claim's latest Warning Event (a
// StorageClass that does not exist, a provisioner that fails), else of its latest Normal one
// that has been said for the pods' bound by now (first said stuckAfter ago or earlier: a wait
// that is only slow is said for a moment): some waits that last are only Normal
// (FailedBinding: no StorageClass is set and none is the default; ExternalProvisioning: the
// provisioner has not answered). WaitForFirstConsumer and WaitForPodScheduled are left out: that claim waits for
// its pod to be scheduled, and the pod's own condition says why it is not (the scheduler's
// "Insufficient cpu"), which is what Degraded must name.
func claimWhy(events []corev1.Event, now time.Time, stuckAfter time.Duration) string {
	var warning, normal *corev1.Event
	for i := range events {
		e := &events[i]
		latest := &normal
		switch {
		case e.Type == corev1.EventTypeWarning:
			latest = &warning
		case waitsForPod[e.Reason] || now.Sub(eventFirstTime(e)) < stuckAfter:
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
			DataRanOn:   pvc.Annotations[member.AnnotationDataRanOn],
			Removed:     removedFlagged(pvc),
			Problem:     o.claimProblems[ord],
		}
	}
	return out
}

// removedFlagged: the claim is flagged (member.AnnotationRemoved) with the member it is
// marked with, as removed.
func removedFlagged(pvc *corev1.PersistentVolumeClaim) bool {
	id := member.ParseID(pvc.Annotations[member.AnnotationMemberID])
	return id != 0 && member.ParseID(pvc.Annotations[member.AnnotationRemoved]) == id
}
