package cluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// An object is this cluster's when the cluster is its controlling owner (the UID of the
// ownerReference is the cluster's). Two more cases are taken as the cluster's:
//   - a member claim no controller owns, labelled for the cluster: a claim kept on purpose
//     (whenDeleted Retain) has no owner; the member-ID mark on it says whose data it holds;
//   - a member pod no controller owns, labelled for the cluster and running etcd with the
//     cluster's token (which holds the cluster's UID): it is adopted, its ownerReference put
//     back (member.Adoptable).
// Anything else with the name of one of the cluster's objects is foreign: it is reported
// (Degraded, ReasonForeignObject, a Warning Event once) and never deleted, overwritten or
// acted on, and nothing is done to the member whose name it has.

// ErrForeignObject is returned when a create finds an object of that name that is not the
// cluster's.
var ErrForeignObject = errors.New("an object of that name exists and is not this cluster's")

// foreignError is the error a create returns when it met a foreign object.
type foreignError struct{ obj plan.ForeignObject }

func (e *foreignError) Error() string { return e.obj.String() + ": " + ErrForeignObject.Error() }
func (e *foreignError) Unwrap() error { return ErrForeignObject }

// foreignObject describes obj, which is not the cluster's.
func foreignObject(kind plan.ForeignKind, obj metav1.Object, ordinal int) plan.ForeignObject {
	owner := "no controller"
	if ref := metav1.GetControllerOf(obj); ref != nil {
		owner = "controlled by " + ref.Kind + " " + ref.Name
	} else if len(obj.GetLabels()) == 0 {
		owner = "no controller, no labels"
	}
	return plan.ForeignObject{Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Ordinal: ordinal, Owner: owner}
}

// claimIsOurs: the claim is controlled by the cluster, or by nobody and labelled for it (a
// claim kept by an earlier cluster of the name, whenDeleted Retain).
func claimIsOurs(c *api.EtcdCluster, pvc *corev1.PersistentVolumeClaim) bool {
	if owner := metav1.GetControllerOf(pvc); owner != nil {
		return owner.UID == c.UID
	}
	return member.ClusterSelector(c.Name).Matches(labels.Set(pvc.Labels))
}

// lookForeign asks the API server for the member pods (and claims) the cache did not show
// for the ordinals a pass may act on next: the caches see only labelled objects, and a pod or
// claim of a member's name stripped of its labels, or made by hand, is found only so.
func (r *Reconciler) lookForeign(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	next := o.nextOrdinals()
	for _, ord := range next {
		if _, ok := o.pods[ord]; !ok && !o.hasForeign(plan.ForeignPod, ord) {
			p, err := r.deps.KubeClient.CoreV1().Pods(c.Namespace).Get(ctx, member.Name(c.Name, ord), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return fmt.Errorf("getting pod %s: %w", member.Name(c.Name, ord), err)
			case !metav1.IsControlledBy(p, c):
				o.foreign = append(o.foreign, foreignObject(plan.ForeignPod, p, ord))
			}
		}
	}
	if !member.HasClaims(&c.Spec) {
		return nil
	}
	// The claims of the member pods too: the planner takes a member's data for gone when its
	// pod waits (or goes) without a claim, so a claim is missing only when the API says so.
	for ord := range o.pods {
		next = append(next, ord)
	}
	return r.lookClaims(ctx, c, o, next)
}

// lookClaims asks the API server for the claims of the ordinals the cache does not show: one
// of the cluster's (not in the cache yet, or its labels stripped) is observed as such, any
// other as foreign.
func (r *Reconciler) lookClaims(ctx context.Context, c *api.EtcdCluster, o *observation, ordinals []int) error {
	for _, ord := range ordinals {
		if _, ok := o.claims[ord]; ok || o.hasForeign(plan.ForeignClaim, ord) {
			continue
		}
		name := member.ClaimName(c.Name, ord)
		pvc, err := r.deps.KubeClient.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("getting claim %s: %w", name, err)
		case claimIsOurs(c, pvc) || markedUnowned(pvc):
			o.claims[ord] = pvc
		default:
			o.foreign = append(o.foreign, foreignObject(plan.ForeignClaim, pvc, ord))
		}
	}
	return nil
}

// markedUnowned: a claim no controller owns that the operator marked with the member whose
// data it holds. Only a claim of this cluster's member name is ever marked so: stripped of its
// labels, it is still the member's data, never someone else's claim to stop for.
func markedUnowned(pvc *corev1.PersistentVolumeClaim) bool {
	return metav1.GetControllerOf(pvc) == nil && member.ParseID(pvc.Annotations[member.AnnotationMemberID]) != 0
}

// nextOrdinals are the ordinals without a pod in the cache that a pass may act on next: the
// members status last listed (a member whose pod seems gone is replaced or removed), and
// those below spec.size (the next pod made, and the ones made ahead of it).
func (o *observation) nextOrdinals() []int {
	c := o.cluster
	seen := map[int]bool{}
	var out []int
	add := func(ord int) {
		if _, ok := o.pods[ord]; !ok && !seen[ord] {
			seen[ord] = true
			out = append(out, ord)
		}
	}
	for _, m := range c.Status.Members {
		if ord, ok := member.Ordinal(c.Name, m.Name); ok {
			add(ord)
		}
	}
	for ord := 0; ord < int(c.Spec.Size); ord++ {
		add(ord)
	}
	return out
}

func (o *observation) hasForeign(kind plan.ForeignKind, ordinal int) bool {
	for _, f := range o.foreign {
		if f.Kind == kind && f.Ordinal == ordinal {
			return true
		}
	}
	return false
}

// reportForeign records a Warning Event for every foreign object not reported before.
func (r *Reconciler) reportForeign(c *api.EtcdCluster, foreign []plan.ForeignObject) {
	for _, f := range foreign {
		if !r.conflicts.report(conflictKey(c, string(f.Kind), f.Name), f.UID) {
			continue
		}
		r.log(c).WithFields(map[string]any{"kind": string(f.Kind), "object": f.Name, "owner": f.Owner}).
			Warn("an object with one of the cluster's names is not the cluster's")
		r.event(c, corev1.EventTypeWarning, EventForeignObject, "%s has the name of one of this cluster's objects and is not this cluster's: "+
			"it is left alone, and nothing is done to what it is named after until it is removed or renamed", f)
	}
}
