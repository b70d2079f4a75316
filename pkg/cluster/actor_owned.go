package cluster

import (
	"context"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// The actor's writes of the objects the cluster owns whole (kept by server-side apply), of
// the EtcdCluster's own annotations and spec, and of the cluster's installation Lease.

// applyOptions are the options of every server-side apply: the operator's field manager, and
// Force, since the fields it applies are its own to decide.
var applyOptions = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

func (m *realActor) ApplyService(ctx context.Context, c *api.EtcdCluster, want, have *corev1.Service) error {
	create := have == nil
	services := m.kube.CoreV1().Services(c.Namespace)
	if !create && portsClash(have, want) {
		body, err := patchOf(have.UID).spec(servicePortsPatch{Ports: want.Spec.Ports}).encode()
		if err == nil {
			_, err = services.Patch(ctx, have.Name, types.MergePatchType, body, metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("updating service %s: %w", want.Name, err)
		}
	}
	if _, err := services.Apply(ctx, serviceApply(want), applyOptions); err != nil {
		if create {
			return fmt.Errorf("creating service %s: %w", want.Name, err)
		}
		return fmt.Errorf("updating service %s: %w", want.Name, err)
	}
	log := m.clusterLog(c).WithField("service", want.Name)
	if !create {
		log.Info("restored service spec")
		return nil
	}
	log.Info("created service")
	m.event(c, corev1.EventTypeNormal, EventServiceCreated, "Created service %s", want.Name)
	return nil
}

// The Secrets' data is never logged: it holds private keys.
func (m *realActor) CreateSecret(ctx context.Context, c *api.EtcdCluster, want *corev1.Secret) (bool, error) {
	_, err := m.kube.CoreV1().Secrets(c.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("creating secret %s: %w", want.Name, err)
	}
	m.clusterLog(c).WithField("secret", want.Name).Info("created secret")
	return true, nil
}

func (m *realActor) UpdateSecret(ctx context.Context, c *api.EtcdCluster, want *corev1.Secret) error {
	if _, err := m.kube.CoreV1().Secrets(c.Namespace).Update(ctx, want, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("updating secret %s: %w", want.Name, err)
	}
	m.clusterLog(c).WithField("secret", want.Name).Info("updated the certificates in secret")
	return nil
}

func (m *realActor) DeleteService(ctx context.Context, c *api.EtcdCluster, svc *corev1.Service) error {
	err := m.kube.CoreV1().Services(c.Namespace).Delete(ctx, svc.Name, uidPrecondition(svc.UID))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
	case err != nil:
		return fmt.Errorf("deleting service %s: %w", svc.Name, err)
	default:
		m.clusterLog(c).WithField("service", svc.Name).Info("deleted the service of a member no longer wanted")
	}
	return nil
}

func (m *realActor) ApplyBudget(ctx context.Context, c *api.EtcdCluster, want, have *policyv1.PodDisruptionBudget) error {
	budgets := m.kube.PolicyV1().PodDisruptionBudgets(c.Namespace)
	if have != nil && have.Spec.MaxUnavailable != nil {
		body, err := patchOf(have.UID).spec(budgetSpecPatch{MinAvailable: want.Spec.MinAvailable}).encode()
		if err == nil {
			_, err = budgets.Patch(ctx, have.Name, types.MergePatchType, body, metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("dropping maxUnavailable from disruption budget %s: %w", have.Name, err)
		}
	}
	if _, err := budgets.Apply(ctx, budgetApply(want), applyOptions); err != nil {
		return fmt.Errorf("applying disruption budget %s: %w", want.Name, err)
	}
	log := m.clusterLog(c).WithField("budget", want.Name)
	if have != nil {
		log.WithField("minAvailable", want.Spec.MinAvailable.String()).Info("updated disruption budget")
		return nil
	}
	log.Info("created disruption budget")
	m.event(c, corev1.EventTypeNormal, EventBudgetCreated, "Created disruption budget %s (at least %s members available)",
		want.Name, want.Spec.MinAvailable.String())
	return nil
}

func (m *realActor) ApplyNetworkPolicy(ctx context.Context, c *api.EtcdCluster, want *networkingv1.NetworkPolicy, create bool) error {
	cfg, err := networkPolicyApply(want)
	if err == nil {
		_, err = m.kube.NetworkingV1().NetworkPolicies(c.Namespace).Apply(ctx, cfg, applyOptions)
	}
	if err != nil {
		return fmt.Errorf("applying network policy %s: %w", want.Name, err)
	}
	log := m.clusterLog(c).WithField("networkPolicy", want.Name)
	if !create {
		log.Info("updated network policy")
		return nil
	}
	log.Info("created network policy")
	m.event(c, corev1.EventTypeNormal, EventNetworkPolicyCreated, "Created network policy %s", want.Name)
	return nil
}

func (m *realActor) DeleteNetworkPolicy(ctx context.Context, c *api.EtcdCluster, have *networkingv1.NetworkPolicy) error {
	err := m.kube.NetworkingV1().NetworkPolicies(c.Namespace).Delete(ctx, have.Name, uidPrecondition(have.UID))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting network policy %s: %w", have.Name, err)
	}
	m.clusterLog(c).WithField("networkPolicy", have.Name).Info("deleted network policy")
	m.event(c, corev1.EventTypeNormal, EventNetworkPolicyDeleted, "Deleted network policy %s: spec.networkPolicy is unset", have.Name)
	return nil
}

func (m *realActor) AnnotateCluster(ctx context.Context, c *api.EtcdCluster, key, value string) error {
	return m.patchCluster(ctx, c, patchOf(c.UID).annotate(key, value))
}

func (m *realActor) UnannotateCluster(ctx context.Context, c *api.EtcdCluster, key string) error {
	if err := m.patchCluster(ctx, c, patchOf(c.UID).unannotate(key)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func (m *realActor) PatchClusterStorage(ctx context.Context, c *api.EtcdCluster, storage *api.StorageSpec) error {
	return m.patchCluster(ctx, c, patchOf(c.UID).spec(clusterSpecPatch{Storage: storage}))
}

func (m *realActor) SetClaimsFinalizer(ctx context.Context, c *api.EtcdCluster, on bool) (bool, error) {
	list := slices.DeleteFunc(slices.Clone(c.Finalizers), func(f string) bool { return f == api.FinalizerClaims })
	verb := "removing"
	if on {
		list, verb = append(list, api.FinalizerClaims), "adding"
	}
	err := m.patchCluster(ctx, c, patchOf(c.UID).asRead(c.ResourceVersion).finalizers(list))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s the finalizer %s: %w", verb, api.FinalizerClaims, err)
	}
	m.clusterLog(c).WithFields(map[string]any{"finalizer": api.FinalizerClaims, "present": on}).Info("set the claims finalizer")
	return true, nil
}

// patchCluster sends a merge patch of the EtcdCluster.
func (m *realActor) patchCluster(ctx context.Context, c *api.EtcdCluster, patch *objectPatch) error {
	body, err := patch.encode()
	if err != nil {
		return err
	}
	_, err = m.etcdAPI.EtcdV1alpha1().EtcdClusters(c.Namespace).Patch(ctx, c.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

func (m *realActor) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (bool, error) {
	_, err := m.kube.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("creating lease %s: %w", lease.Name, err)
	}
	return true, nil
}

func (m *realActor) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (bool, error) {
	_, err := m.kube.CoordinationV1().Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("renewing lease %s: %w", lease.Name, err)
	}
	return true, nil
}
