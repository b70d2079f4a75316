package cluster

// What the operator owns of the objects it keeps whole by server-side apply: the apply
// configuration (only the fields the operator decides; a Service's clusterIP, ipFamilies and
// the like are left to the API server and other controllers), and whether the cached object
// already has those fields, so that an idle pass applies nothing.

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
)

// serviceApply is what the operator applies of Service want: its labels and controller, and
// of its spec the selector, the ports, whether not-ready addresses are published, its type
// and, for a headless Service, clusterIP None.
func serviceApply(want *corev1.Service) *corev1ac.ServiceApplyConfiguration {
	spec := corev1ac.ServiceSpec().
		WithSelector(want.Spec.Selector).
		WithPublishNotReadyAddresses(want.Spec.PublishNotReadyAddresses)
	if want.Spec.ClusterIP == corev1.ClusterIPNone {
		spec.WithClusterIP(corev1.ClusterIPNone)
	}
	if want.Spec.Type != "" {
		spec.WithType(want.Spec.Type)
	}
	for _, p := range want.Spec.Ports {
		spec.WithPorts(corev1ac.ServicePort().WithName(p.Name).WithPort(p.Port).
			WithTargetPort(p.TargetPort).WithProtocol(p.Protocol))
	}
	return corev1ac.Service(want.Name, want.Namespace).
		WithLabels(want.Labels).
		WithOwnerReferences(ownerRefsApply(want.OwnerReferences)...).
		WithSpec(spec)
}

// serviceCurrent reports whether have carries what the operator applies of want: the same
// selector (an atomic map) and publishing of not-ready addresses, and each of want's ports
// (ports are keyed by port and protocol: one someone else added is theirs).
func serviceCurrent(have, want *corev1.Service) bool {
	if !equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) ||
		have.Spec.PublishNotReadyAddresses != want.Spec.PublishNotReadyAddresses {
		return false
	}
	for _, p := range want.Spec.Ports {
		if !slices.ContainsFunc(have.Spec.Ports, func(h corev1.ServicePort) bool { return equality.Semantic.DeepEqual(h, p) }) {
			return false
		}
	}
	return true
}

// portsClash reports whether have has a port under the name of one of want's that is
// another port: an apply would add want's beside it, and the API server refuses two ports of
// one name.
func portsClash(have, want *corev1.Service) bool {
	for _, w := range want.Spec.Ports {
		if slices.ContainsFunc(have.Spec.Ports, func(h corev1.ServicePort) bool {
			return h.Name == w.Name && (h.Port != w.Port || h.Protocol != w.Protocol)
		}) {
			return true
		}
	}
	return false
}

// budgetApply is what the operator applies of budget want: its labels and controller, its
// minAvailable, its selector and its unhealthyPodEvictionPolicy.
func budgetApply(want *policyv1.PodDisruptionBudget) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	spec := policyv1ac.PodDisruptionBudgetSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(want.Spec.Selector.MatchLabels))
	if want.Spec.MinAvailable != nil {
		spec.WithMinAvailable(*want.Spec.MinAvailable)
	}
	if want.Spec.UnhealthyPodEvictionPolicy != nil {
		spec.WithUnhealthyPodEvictionPolicy(*want.Spec.UnhealthyPodEvictionPolicy)
	}
	return policyv1ac.PodDisruptionBudget(want.Name, want.Namespace).
		WithLabels(want.Labels).
		WithOwnerReferences(ownerRefsApply(want.OwnerReferences)...).
		WithSpec(spec)
}

// budgetCurrent reports whether have carries want's minAvailable and selector, no
// maxUnavailable (which a budget cannot carry with minAvailable), and want's
// unhealthyPodEvictionPolicy or none (Kubernetes' default, the same: a budget made before the
// operator set it, or by an API server that does not know the field, is not applied again on
// every pass).
func budgetCurrent(have, want *policyv1.PodDisruptionBudget) bool {
	policy := have.Spec.UnhealthyPodEvictionPolicy
	return equality.Semantic.DeepEqual(have.Spec.MinAvailable, want.Spec.MinAvailable) && have.Spec.MaxUnavailable == nil &&
		equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) &&
		(policy == nil || equality.Semantic.DeepEqual(policy, want.Spec.UnhealthyPodEvictionPolicy))
}

// networkPolicyApply is what the operator applies of policy want: its labels and controller,
// and its pod selector, policy types and ingress rules (each atomic).
func networkPolicyApply(want *networkingv1.NetworkPolicy) (*networkingv1ac.NetworkPolicyApplyConfiguration, error) {
	spec := networkingv1ac.NetworkPolicySpec()
	if err := decode(want.Spec, spec); err != nil {
		return nil, err
	}
	return networkingv1ac.NetworkPolicy(want.Name, want.Namespace).
		WithLabels(want.Labels).
		WithOwnerReferences(ownerRefsApply(want.OwnerReferences)...).
		WithSpec(spec), nil
}

// networkPolicyCurrent reports whether have carries want's pod selector, policy types and
// ingress rules.
func networkPolicyCurrent(have, want *networkingv1.NetworkPolicy) bool {
	return equality.Semantic.DeepEqual(have.Spec.PodSelector, want.Spec.PodSelector) &&
		equality.Semantic.DeepEqual(have.Spec.PolicyTypes, want.Spec.PolicyTypes) &&
		equality.Semantic.DeepEqual(have.Spec.Ingress, want.Spec.Ingress)
}

func ownerRefsApply(refs []metav1.OwnerReference) []*metav1ac.OwnerReferenceApplyConfiguration {
	out := make([]*metav1ac.OwnerReferenceApplyConfiguration, 0, len(refs))
	for _, r := range refs {
		ref := metav1ac.OwnerReference().WithAPIVersion(r.APIVersion).WithKind(r.Kind).WithName(r.Name).WithUID(r.UID)
		if r.Controller != nil {
			ref.WithController(*r.Controller)
		}
		if r.BlockOwnerDeletion != nil {
			ref.WithBlockOwnerDeletion(*r.BlockOwnerDeletion)
		}
		out = append(out, ref)
	}
	return out
}

// decode fills an apply configuration from the typed object part it stands for: both have
// the same JSON form, and a typed part carries only the fields its builder set.
func decode(from, into any) error {
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, into)
	}
	if err != nil {
		return fmt.Errorf("building the apply configuration: %w", err)
	}
	return nil
}
