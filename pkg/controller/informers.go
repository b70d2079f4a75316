package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
	etcdinformers "github.com/etcd-operator/etcd-operator/pkg/generated/informers/externalversions"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Informers are the shared informer factories every kind and every pass reads from: a kind
// takes its informers from them (Etcd().Etcd().V1alpha1().EtcdClusters(), Kube().Core().V1().Pods()),
// and two kinds that ask for the same type share one informer and one cache. The
// etcd.operator.dev informers see every object in scope; the Kubernetes informers see only
// objects labelled as managed by the operator, so the cache stays small however busy the rest
// of the cluster is. Ask for every informer before Start: the factories start only the
// informers that exist.
type Informers struct {
	etcdFactory etcdinformers.SharedInformerFactory
	kubeFactory kubeinformers.SharedInformerFactory
}

// NewInformers builds the informer factories for namespace ("" means all namespaces). resync
// is the etcd.operator.dev informers' resync period: every resync wakes every object's loop
// once. The managed-object informers never resync; their changes reach the loops as events,
// and the resync of their owners already wakes each loop periodically.
func NewInformers(kube kubernetes.Interface, etcd versioned.Interface, namespace string, resync time.Duration) *Informers {
	selector := member.ManagedSelector().String()
	return &Informers{
		etcdFactory: etcdinformers.NewSharedInformerFactoryWithOptions(etcd, resync,
			etcdinformers.WithNamespace(namespace),
			etcdinformers.WithTransform(stripManagedFields)),
		kubeFactory: kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
			kubeinformers.WithNamespace(namespace),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
			kubeinformers.WithTransform(stripManagedFields)),
	}
}

// Etcd is the factory of the etcd.operator.dev informers.
func (i *Informers) Etcd() etcdinformers.SharedInformerFactory { return i.etcdFactory }

// Kube is the factory of the informers on the Kubernetes objects the operator manages.
func (i *Informers) Kube() kubeinformers.SharedInformerFactory { return i.kubeFactory }

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
