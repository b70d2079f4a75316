package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// clusterKind is the kind of the controller ownerReference that maps pods and Services to
// their cluster.
const clusterKind = "EtcdCluster"

// keyFunc maps an object the controller watches to the key of its EtcdCluster.
type keyFunc func(obj metav1.Object) (key string, ok bool)

// clusterHandler enqueues an EtcdCluster's own key on every event, resyncs included: a resync
// is how idle loops are woken periodically.
func (c *Controller) clusterHandler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			c.log.WithError(err).Warn("Ignoring an EtcdCluster event without a key")
			return
		}
		c.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// ownedHandler enqueues the key of the cluster an object belongs to, as told by keyOf. An
// update that moves an object from one cluster to another enqueues both.
func (c *Controller) ownedHandler(keyOf keyFunc) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			c.log.WithField("type", typeName(obj)).Warn("Ignoring an event for an object without metadata")
			return
		}
		if key, ok := keyOf(m); ok {
			c.queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			enqueue(newObj)
			enqueue(oldObj)
		},
		DeleteFunc: enqueue,
	}
}

// ownerClusterKey maps an object to the EtcdCluster named by its controller ownerReference.
func ownerClusterKey(obj metav1.Object) (string, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != clusterKind {
		return "", false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != api.GroupName {
		return "", false
	}
	return clusterKey(obj.GetNamespace(), ref.Name), true
}

// labelClusterKey maps an object to the EtcdCluster named by its cluster label. EndpointSlices
// carry no ownerReference to the cluster (their owner is the Service) but inherit its labels.
func labelClusterKey(obj metav1.Object) (string, bool) {
	name := obj.GetLabels()[member.LabelCluster]
	if name == "" {
		return "", false
	}
	return clusterKey(obj.GetNamespace(), name), true
}

// clusterKey is the workqueue key of a cluster.
func clusterKey(namespace, name string) string {
	return cache.NewObjectName(namespace, name).String()
}

// typeName names obj's dynamic type for logs.
func typeName(obj any) string { return fmt.Sprintf("%T", obj) }
