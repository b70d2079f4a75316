package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// KeyFunc maps an object the controller watches to the key (namespace/name) of the object it
// belongs to; ok is false when it belongs to none of the kind's objects.
type KeyFunc func(obj metav1.Object) (key string, ok bool)

// kindHandler enqueues an object's own key on every event, resyncs included: a resync is how
// idle loops are woken periodically.
func (d *dispatcher) kindHandler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			d.log.WithError(err).Warn("Ignoring an event without a key")
			return
		}
		d.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// ownedHandler enqueues the key of the object another object belongs to, as told by keyOf.
// An update that moves an object from one owner to another enqueues both.
func (d *dispatcher) ownedHandler(keyOf KeyFunc) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			d.log.WithField("type", typeName(obj)).Warn("Ignoring an event for an object without metadata")
			return
		}
		if key, ok := keyOf(m); ok {
			d.queue.Add(key)
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

// OwnerKey maps an object to the object named by its controller ownerReference, when that
// reference is to kind in API group (any version of it).
func OwnerKey(group, kind string) KeyFunc {
	return func(obj metav1.Object) (string, bool) {
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.Kind != kind {
			return "", false
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != group {
			return "", false
		}
		return objectKey(obj.GetNamespace(), ref.Name), true
	}
}

// LabelKey maps an object to the object named by its label, in the object's namespace. It
// serves objects that carry no controller ownerReference to their owner: an EndpointSlice
// (owned by its Service) that inherits the Service's labels, or a claim kept after its owner.
func LabelKey(label string) KeyFunc {
	return func(obj metav1.Object) (string, bool) {
		name := obj.GetLabels()[label]
		if name == "" {
			return "", false
		}
		return objectKey(obj.GetNamespace(), name), true
	}
}

// objectKey is the workqueue key of an object.
func objectKey(namespace, name string) string {
	return cache.NewObjectName(namespace, name).String()
}

// typeName names obj's dynamic type for logs.
func typeName(obj any) string { return fmt.Sprintf("%T", obj) }
