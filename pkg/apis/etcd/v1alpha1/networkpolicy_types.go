package v1alpha1

import networkingv1 "k8s.io/api/networking/v1"

// NetworkPolicySpec says who may reach the members besides themselves and the operator.
type NetworkPolicySpec struct {
	// Clients may reach the client port: each a podSelector (pods of the cluster's namespace),
	// a namespaceSelector (every pod of those namespaces), both (those pods of those
	// namespaces), or an ipBlock. Left empty, only the members and the operator may.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Clients []networkingv1.NetworkPolicyPeer `json:"clients,omitempty"`
}
