package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ensureNetworkPolicy keeps the cluster's NetworkPolicy as spec.networkPolicy asks: applied
// when missing or when it lacks what the operator owns of it (apply.go), deleted once the
// spec no longer asks for one. A policy of that name that is not this cluster's is left alone
// and reported once. Like the budget, failures are logged, not returned: a policy must not
// stop member repairs.
func (r *Reconciler) ensureNetworkPolicy(ctx context.Context, c *api.EtcdCluster) {
	name := member.NetworkPolicyName(c.Name)
	log := r.log(c).WithField("networkPolicy", name)
	want := member.NetworkPolicy(c, r.deps.OperatorPeer)
	// The cache holds only the operator's own objects (by their labels).
	have, err := r.deps.NetworkPolicies.NetworkPolicies(c.Namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		log.WithError(err).Warn("reading the network policy from the cache")
		return
	}
	cached := err == nil
	owned := cached && metav1.IsControlledBy(have, c)
	switch {
	case want == nil && owned:
		if err := r.control.DeleteNetworkPolicy(ctx, c, have); err != nil {
			log.WithError(err).Warn("deleting the network policy")
		}
	case want == nil:
	case cached && !owned:
		r.reportForeignPolicy(c, have.UID)
	case !cached:
		r.createNetworkPolicy(ctx, c, want)
	case !networkPolicyCurrent(have, want):
		if err := r.control.ApplyNetworkPolicy(ctx, c, want, false); err != nil {
			log.WithError(err).Warn("updating the network policy")
		}
	}
}

// createNetworkPolicy applies the cluster's policy, missing from the cache, unless the API
// has a policy of that name the cache does not show: someone else's, without the operator's
// labels (or the cluster's own, not yet in the cache: the next pass sees it).
func (r *Reconciler) createNetworkPolicy(ctx context.Context, c *api.EtcdCluster, want *networkingv1.NetworkPolicy) {
	log := r.log(c).WithField("networkPolicy", want.Name)
	have, err := r.deps.KubeClient.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := r.control.ApplyNetworkPolicy(ctx, c, want, true); err != nil {
			log.WithError(err).Warn("creating the network policy")
		}
	case err != nil:
		log.WithError(err).Warn("getting the network policy")
	case !metav1.IsControlledBy(have, c):
		r.reportForeignPolicy(c, "")
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
