package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ensureOwned creates the objects a cluster owns besides its member pods when they are
// missing (the headless peer Service, the client Service, the disruption budget), and puts
// back the fields the operator depends on when someone changed them.
func (r *Reconciler) ensureOwned(ctx context.Context, c *api.EtcdCluster) error {
	for _, want := range []*corev1.Service{member.PeerService(c), member.ClientService(c)} {
		if err := r.ensureService(ctx, c, want); err != nil {
			return err
		}
	}
	return r.ensureBudget(ctx, c, member.DisruptionBudget(c))
}

func (r *Reconciler) ensureService(ctx context.Context, c *api.EtcdCluster, want *corev1.Service) error {
	have, err := r.deps.Services.Services(c.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = r.deps.Kube.CoreV1().Services(c.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("creating service %s: %w", want.Name, err)
		}
		r.log(c).WithField("service", want.Name).Info("created service")
		r.event(c, corev1.EventTypeNormal, EventServiceCreated, "Created service %s", want.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting service %s: %w", want.Name, err)
	}
	if !metav1.IsControlledBy(have, c) {
		return fmt.Errorf("service %s exists and is not owned by this cluster", want.Name)
	}
	if equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) &&
		have.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses &&
		equality.Semantic.DeepEqual(have.Spec.Ports, want.Spec.Ports) {
		return nil
	}
	upd := have.DeepCopy()
	upd.Spec.Selector = want.Spec.Selector
	upd.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
	upd.Spec.Ports = want.Spec.Ports
	if _, err := r.deps.Kube.CoreV1().Services(c.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating service %s: %w", want.Name, err)
	}
	r.log(c).WithField("service", want.Name).Info("restored service spec")
	return nil
}

// ensureBudget keeps the disruption budget in step with spec.size.
func (r *Reconciler) ensureBudget(ctx context.Context, c *api.EtcdCluster, want *policyv1.PodDisruptionBudget) error {
	have, err := r.deps.Budgets.PodDisruptionBudgets(c.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = r.deps.Kube.PolicyV1().PodDisruptionBudgets(c.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("creating disruption budget %s: %w", want.Name, err)
		}
		r.log(c).WithField("budget", want.Name).Info("created disruption budget")
		r.event(c, corev1.EventTypeNormal, EventBudgetCreated, "Created disruption budget %s (at least %s members available)",
			want.Name, want.Spec.MinAvailable.String())
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting disruption budget %s: %w", want.Name, err)
	}
	if !metav1.IsControlledBy(have, c) {
		// Someone else's budget of that name: leave it alone, say so, and run without ours.
		r.log(c).WithField("budget", want.Name).Warn("a disruption budget of that name exists and is not this cluster's")
		r.event(c, corev1.EventTypeWarning, EventBudgetConflict,
			"Disruption budget %s exists and is not this cluster's: the member pods have no budget of the operator's", want.Name)
		return nil
	}
	if equality.Semantic.DeepEqual(have.Spec.MinAvailable, want.Spec.MinAvailable) && have.Spec.MaxUnavailable == nil &&
		equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) {
		return nil
	}
	upd := have.DeepCopy()
	upd.Spec.MinAvailable, upd.Spec.MaxUnavailable, upd.Spec.Selector = want.Spec.MinAvailable, nil, want.Spec.Selector
	if _, err := r.deps.Kube.PolicyV1().PodDisruptionBudgets(c.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating disruption budget %s: %w", want.Name, err)
	}
	r.log(c).WithField("budget", want.Name).WithField("minAvailable", want.Spec.MinAvailable.String()).Info("updated disruption budget")
	return nil
}
