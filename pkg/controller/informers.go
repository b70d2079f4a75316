package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
	etcdinformers "github.com/etcd-operator/etcd-operator/pkg/generated/informers/externalversions"
	etcdinformersv1 "github.com/etcd-operator/etcd-operator/pkg/generated/informers/externalversions/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Informers are the shared informers the controller and the cluster passes read from. The
// EtcdCluster informer sees every EtcdCluster in scope; the Pod, Service and EndpointSlice
// (and claim) informers see only objects labelled as managed by the operator, so the cache stays small
// however busy the rest of the cluster is.
type Informers struct {
	etcdFactory etcdinformers.SharedInformerFactory
	kubeFactory kubeinformers.SharedInformerFactory

	// Clusters informs on EtcdClusters.
	Clusters etcdinformersv1.EtcdClusterInformer
	// Pods informs on the member pods.
	Pods coreinformers.PodInformer
	// Services informs on the peer and client Services.
	Services coreinformers.ServiceInformer
	// EndpointSlices informs on the EndpointSlices of those Services.
	EndpointSlices discoveryinformers.EndpointSliceInformer
	// Budgets informs on the clusters' PodDisruptionBudgets.
	Budgets policyinformers.PodDisruptionBudgetInformer
	// Claims informs on the members' PersistentVolumeClaims.
	Claims coreinformers.PersistentVolumeClaimInformer
	// NetworkPolicies informs on the clusters' NetworkPolicies.
	NetworkPolicies networkinginformers.NetworkPolicyInformer
}

// NewInformers builds the informers for namespace ("" means all namespaces). resync is the
// EtcdCluster informer's resync period: every resync wakes every cluster's loop once. The
// managed-object informers never resync; their changes reach the loops as events, and the
// EtcdCluster resync already wakes each loop periodically.
func NewInformers(kube kubernetes.Interface, etcd versioned.Interface, namespace string, resync time.Duration) *Informers {
	etcdFactory := etcdinformers.NewSharedInformerFactoryWithOptions(etcd, resync,
		etcdinformers.WithNamespace(namespace),
		etcdinformers.WithTransform(stripManagedFields))
	selector := member.ManagedSelector().String()
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		kubeinformers.WithTransform(stripManagedFields))
	inf := &Informers{
		etcdFactory:     etcdFactory,
		kubeFactory:     kubeFactory,
		Clusters:        etcdFactory.Etcd().V1alpha1().EtcdClusters(),
		Pods:            kubeFactory.Core().V1().Pods(),
		Services:        kubeFactory.Core().V1().Services(),
		EndpointSlices:  kubeFactory.Discovery().V1().EndpointSlices(),
		Budgets:         kubeFactory.Policy().V1().PodDisruptionBudgets(),
		Claims:          kubeFactory.Core().V1().PersistentVolumeClaims(),
		NetworkPolicies: kubeFactory.Networking().V1().NetworkPolicies(),
	}
	// Instantiate every informer now: the factories start only informers that exist.
	inf.Clusters.Informer()
	inf.Pods.Informer()
	inf.Services.Informer()
	inf.EndpointSlices.Informer()
	inf.Budgets.Informer()
	inf.Claims.Informer()
	inf.NetworkPolicies.Informer()
	return inf
}

// Start starts every informer; they stop when ctx is done. Call Shutdown to wait for them.
func (i *Informers) Start(ctx context.Context) {
	i.etcdFactory.Start(ctx.Done())
	i.kubeFactory.Start(ctx.Done())
}

// WaitForCacheSync blocks until every informer has listed its objects, or ctx is done.
func (i *Informers) WaitForCacheSync(ctx context.Context) error {
	for typ, ok := range i.etcdFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("waiting for the %v informer to sync: %w", typ, context.Cause(ctx))
		}
	}
	for typ, ok := range i.kubeFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("waiting for the %v informer to sync: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// Shutdown waits until every started informer has stopped. The context given to Start must be
// done first, or Shutdown blocks.
func (i *Informers) Shutdown() {
	i.etcdFactory.Shutdown()
	i.kubeFactory.Shutdown()
}

// stripManagedFields drops metadata.managedFields before an object enters a cache: the
// operator never reads them and they are often the largest part of an object.
func stripManagedFields(obj any) (any, error) {
	if _, tombstone := obj.(cache.DeletedFinalStateUnknown); tombstone {
		return obj, nil
	}
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}
