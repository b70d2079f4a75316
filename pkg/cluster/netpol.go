package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Events of the cluster's NetworkPolicy.
const (
	EventNetworkPolicyCreated  EventReason = "NetworkPolicyCreated"
	EventNetworkPolicyDeleted  EventReason = "NetworkPolicyDeleted"
	EventNetworkPolicyConflict EventReason = "NetworkPolicyConflict"
)

// ensureNetworkPolicy keeps the cluster's NetworkPolicy as spec.networkPolicy asks: created,
// put back when changed, deleted once the spec no longer asks for one. A policy of that name
// that is not this cluster's is left alone and reported once. Like the budget, failures are
// logged, not returned: a policy must not stop member repairs.
func (r *Reconciler) ensureNetworkPolicy(ctx context.Context, c *api.EtcdCluster) {
	name := member.NetworkPolicyName(c.Name)
	log := r.log(c).WithField("networkPolicy", name)
	policies := r.deps.Kube.NetworkingV1().NetworkPolicies(c.Namespace)
	want := member.NetworkPolicy(c, r.deps.OperatorPeer)
	// The cache holds only the operator's own objects (by their labels).
	have, err := r.deps.NetworkPolicies.NetworkPolicies(c.Namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		log.WithError(err).Warn("reading the network policy from the cache")
		return
	}
	owned := err == nil && metav1.IsControlledBy(have, c)
	switch {
	case want == nil && owned:
		uid := have.UID
		err := policies.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.WithError(err).Warn("deleting the network policy")
			return
		}
		log.Info("deleted network policy")
		r.event(c, corev1.EventTypeNormal, EventNetworkPolicyDeleted, "Deleted network policy %s: spec.networkPolicy is unset", name)
	case want == nil:
	case err == nil && !owned:
		r.reportForeignPolicy(c, have.UID)
	case err != nil: // not found in the cache
		_, err := policies.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache, yet there: someone else's, without the operator's labels.
			r.reportForeignPolicy(c, "")
			return
		}
		if err != nil {
			log.WithError(err).Warn("creating the network policy")
			return
		}
		log.Info("created network policy")
		r.event(c, corev1.EventTypeNormal, EventNetworkPolicyCreated, "Created network policy %s", name)
	case !equality.Semantic.DeepEqual(have.Spec, want.Spec):
		upd := have.DeepCopy()
		upd.Spec = want.Spec
		if _, err := policies.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			log.WithError(err).Warn("updating the network policy")
			return
		}
		log.Info("updated network policy")
	}
}

// reportForeignPolicy says, once per foreign policy, that the cluster's policy cannot be kept.
// uid is empty when only the policy's existence is known (it is not in the cache).
func (r *Reconciler) reportForeignPolicy(c *api.EtcdCluster, uid types.UID) {
	if !r.conflicts.report(conflictKey(c, "NetworkPolicy", c.Name), uid) {
		return
	}
	r.log(c).Warn("a network policy of that name exists and is not this cluster's")
	r.event(c, corev1.EventTypeWarning, EventNetworkPolicyConflict,
		"Network policy %s exists and is not this cluster's: it is left as it is, and spec.networkPolicy is not applied", member.NetworkPolicyName(c.Name))
}
