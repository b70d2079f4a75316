package cluster

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ensureOwned creates the objects a cluster owns besides its member pods when they are
// missing (the headless peer Service, the client Service, the disruption budget, the network
// policy spec.networkPolicy asks for), and puts
// back the fields the operator depends on when someone changed them.
func (r *Reconciler) ensureOwned(ctx context.Context, c *api.EtcdCluster) error {
	for _, want := range []*corev1.Service{member.PeerService(c), member.ClientService(c)} {
		if err := r.ensureService(ctx, c, want); err != nil {
			return err
		}
	}
	r.ensureBudget(ctx, c, member.DisruptionBudget(c))
	r.ensureNetworkPolicy(ctx, c)
	return nil
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

// ensureBudget keeps the disruption budget in step with the cluster's size. A budget of that
// name that is not this cluster's is left alone and reported; the cluster runs on without
// one. Failures are reported, not returned: a missing budget must not stop member repairs.
func (r *Reconciler) ensureBudget(ctx context.Context, c *api.EtcdCluster, want *policyv1.PodDisruptionBudget) {
	log := r.log(c).WithField("budget", want.Name)
	budgets := r.deps.Kube.PolicyV1().PodDisruptionBudgets(c.Namespace)
	have, err := r.deps.Budgets.PodDisruptionBudgets(c.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		// The cache sees only the operator's own objects: someone else's budget of that name
		// is only found by asking the API.
		have, err = budgets.Get(ctx, want.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		if _, err := budgets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			log.WithError(err).Warn("creating disruption budget")
			return
		}
		log.Info("created disruption budget")
		r.event(c, corev1.EventTypeNormal, EventBudgetCreated, "Created disruption budget %s (at least %s members available)",
			want.Name, want.Spec.MinAvailable.String())
		return
	}
	if err != nil {
		log.WithError(err).Warn("getting disruption budget")
		return
	}
	if !metav1.IsControlledBy(have, c) {
		// Said once per foreign budget, not once per pass.
		if r.foreignBudgets.report(c.Namespace+"/"+c.Name, have.UID) {
			log.Warn("a disruption budget of that name exists and is not this cluster's")
			r.event(c, corev1.EventTypeWarning, EventBudgetConflict,
				"Disruption budget %s exists and is not this cluster's: the member pods have no budget of the operator's", want.Name)
		}
		return
	}
	if equality.Semantic.DeepEqual(have.Spec.MinAvailable, want.Spec.MinAvailable) && have.Spec.MaxUnavailable == nil &&
		equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) {
		return
	}
	upd := have.DeepCopy()
	upd.Spec.MinAvailable, upd.Spec.MaxUnavailable, upd.Spec.Selector = want.Spec.MinAvailable, nil, want.Spec.Selector
	if _, err := budgets.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		log.WithError(err).Warn("updating disruption budget")
		return
	}
	log.WithField("minAvailable", want.Spec.MinAvailable.String()).Info("updated disruption budget")
}

// reportedConflicts remembers the foreign budgets already reported, so that a conflict is said
// once, not once per pass. It only saves Events: a restarted operator reports again.
type reportedConflicts struct {
	mu   sync.Mutex
	seen map[string]types.UID // cluster namespace/name -> foreign budget UID
}

// report returns true the first time the cluster meets this foreign budget.
func (r *reportedConflicts) report(cluster string, budget types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seen, ok := r.seen[cluster]; ok && seen == budget {
		return false
	}
	if r.seen == nil {
		r.seen = map[string]types.UID{}
	}
	r.seen[cluster] = budget
	return true
}

// forget drops what was reported for a cluster that is gone.
func (r *reportedConflicts) forget(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, cluster)
}
