package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ensureOwned applies the objects a cluster owns besides its member pods when they are
// missing (the headless peer Service, the client Service, the disruption budget, the network
// policy spec.networkPolicy asks for), and puts back the fields the operator depends on when
// someone changed them. A Service of one of those names that is not the cluster's is
// returned, left alone: the pass reports it and goes on; so is one the API server refuses
// to create ("service NAME: message"), which status reports.
func (r *Reconciler) ensureOwned(ctx context.Context, c *api.EtcdCluster) (foreign []plan.ForeignObject, refused []string, err error) {
	for _, want := range []*corev1.Service{member.PeerService(c), member.ClientService(c)} {
		f, err := r.ensureService(ctx, c, want)
		if msg, ok := refusedByAPIServer(err); ok {
			refused = append(refused, "service "+want.Name+": "+msg)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if f != nil {
			foreign = append(foreign, *f)
		}
	}
	r.ensureBudget(ctx, c, member.DisruptionBudget(c))
	r.ensureNetworkPolicy(ctx, c)
	return foreign, refused, nil
}

// ensureMemberServices keeps a member Service (member.MemberService) for every ordinal below
// spec.size and every ordinal that has a pod or a member, so that a member's address exists
// before its pod does and outlives it; a Service of such a name that is not the cluster's is
// reported, and the member it stands for is never added (its pod is never published). The
// cluster's member Services of other ordinals are deleted, but only once etcd's member list
// is known: a member that etcd still lists keeps its address until it is removed.
func (r *Reconciler) ensureMemberServices(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	wanted := wantedOrdinals(c, o)
	for _, ord := range wanted {
		svc := member.MemberService(c, ord)
		f, err := r.ensureService(ctx, c, svc)
		if msg, refused := refusedByAPIServer(err); refused {
			// The other members go on; status names the refusal, and the member behind the
			// Service is never added (its pod is never published).
			o.refusedServices = append(o.refusedServices, "service "+svc.Name+": "+msg)
			continue
		}
		if err != nil {
			return err
		}
		if f != nil {
			o.foreign = append(o.foreign, *f)
		}
	}
	if !o.membersKnown {
		return nil
	}
	have, err := r.deps.Services.Services(c.Namespace).List(labels.SelectorFromSet(labels.Set{member.LabelCluster: c.Name}))
	if err != nil {
		return fmt.Errorf("listing services: %w", err)
	}
	for _, svc := range have {
		ord, ok := member.MemberServiceOrdinal(c.Name, svc)
		if !ok || slices.Contains(wanted, ord) || !metav1.IsControlledBy(svc, c) {
			continue
		}
		if err := r.control.DeleteService(ctx, c, svc); err != nil {
			return err
		}
	}
	return nil
}

// ensureService keeps one of the cluster's Services as the operator applies it (apply.go),
// applying only when the cached Service lacks what the operator owns of it; a Service of
// that name that is not the cluster's is returned and never changed.
func (r *Reconciler) ensureService(ctx context.Context, c *api.EtcdCluster, want *corev1.Service) (*plan.ForeignObject, error) {
	have, err := r.deps.Services.Services(c.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		// The cache sees only labelled Services: one made by hand, or stripped of its
		// labels, is only found by asking the API.
		have, err = r.deps.KubeClient.CoreV1().Services(c.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, r.control.ApplyService(ctx, c, want, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("getting service %s: %w", want.Name, err)
	}
	if !metav1.IsControlledBy(have, c) {
		f := foreignObject(plan.ForeignService, have, -1)
		return &f, nil
	}
	if serviceCurrent(have, want) {
		return nil, nil
	}
	return nil, r.control.ApplyService(ctx, c, want, have)
}

// ensureBudget keeps the disruption budget in step with the cluster's size. A budget of that
// name that is not this cluster's is left alone and reported; the cluster runs on without
// one. Failures are reported, not returned: a missing budget must not stop member repairs.
func (r *Reconciler) ensureBudget(ctx context.Context, c *api.EtcdCluster, want *policyv1.PodDisruptionBudget) {
	log := r.log(c).WithField("budget", want.Name)
	have, err := r.deps.Budgets.PodDisruptionBudgets(c.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		// The cache sees only the operator's own objects: someone else's budget of that name
		// is only found by asking the API.
		have, err = r.deps.KubeClient.PolicyV1().PodDisruptionBudgets(c.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		if err := r.control.ApplyBudget(ctx, c, want, nil); err != nil {
			log.WithError(err).Warn("creating disruption budget")
		}
		return
	}
	if err != nil {
		log.WithError(err).Warn("getting disruption budget")
		return
	}
	if !metav1.IsControlledBy(have, c) {
		// Said once per foreign budget, not once per pass.
		if r.conflicts.report(conflictKey(c, "PodDisruptionBudget", want.Name), have.UID) {
			log.Warn("a disruption budget of that name exists and is not this cluster's")
			r.event(c, corev1.EventTypeWarning, EventBudgetConflict,
				"Disruption budget %s exists and is not this cluster's: the member pods have no budget of the operator's", want.Name)
		}
		return
	}
	if budgetCurrent(have, want) {
		return
	}
	if err := r.control.ApplyBudget(ctx, c, want, have); err != nil {
		log.WithError(err).Warn("updating disruption budget")
	}
}

// reportedConflicts remembers the foreign objects already reported, so that a conflict is
// said once, not once per pass. It only saves Events: a restarted operator reports again.
type reportedConflicts struct {
	mu   sync.Mutex
	seen map[string]types.UID // conflictKey -> foreign object's UID
}

// conflictKey names one object of one cluster for reportedConflicts.
func conflictKey(c *api.EtcdCluster, kind, name string) string {
	return c.Namespace + "/" + c.Name + "|" + kind + "/" + name
}

// report returns true the first time the key is met with this UID.
func (r *reportedConflicts) report(key string, uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seen, ok := r.seen[key]; ok && seen == uid {
		return false
	}
	if r.seen == nil {
		r.seen = map[string]types.UID{}
	}
	r.seen[key] = uid
	return true
}

// forget drops what was reported for a cluster (namespace/name) that is gone.
func (r *reportedConflicts) forget(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.seen {
		if strings.HasPrefix(k, cluster+"|") {
			delete(r.seen, k)
		}
	}
}
