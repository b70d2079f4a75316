// Package v1alpha1 holds the EtcdCluster API: an etcd cluster that the operator
// bootstraps, scales one member at a time and repairs.
//
// +k8s:deepcopy-gen=package
// +groupName=etcd.operator.dev
// +kubebuilder:object:generate=true
package v1alpha1
