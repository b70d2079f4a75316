package controller

import (
	"fmt"

	"github.com/sirupsen/logrus"
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

// KeysFunc maps an object the controller watches to the keys (namespace/name) of every object
// of a kind that refers to it; none when no object does. An error means the mapping could not
// be read (an index the kind did not declare).
type KeysFunc func(obj metav1.Object) ([]string, error)

// ownedHandler enqueues the keys o maps an object to: its owner's (o.KeyOf) and those of the
// objects that refer to it (o.KeysOf). An update enqueues the keys of both versions, so that
// an object moved from one owner to another wakes both.
func (d *dispatcher) ownedHandler(o Owned) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			d.log.WithField("type", typeName(obj)).Warn("Ignoring an event for an object without metadata")
			return
		}
		for _, key := range d.keysOf(o, m) {
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

// keysOf is every key o maps obj to, its owner's first. A KeysOf that fails is logged and
// gives none; the owner's key is still returned.
func (d *dispatcher) keysOf(o Owned, obj metav1.Object) []string {
	var keys []string
	if o.KeyOf != nil {
		if key, ok := o.KeyOf(obj); ok {
			keys = append(keys, key)
		}
	}
	if o.KeysOf == nil {
		return keys
	}
	referring, err := o.KeysOf(obj)
	if err != nil {
		// The object's type and name only: an owned object may be a Secret.
		d.log.WithFields(logrus.Fields{"type": typeName(obj), "object": objectKey(obj.GetNamespace(), obj.GetName())}).
			WithError(err).Warn("Cannot tell which objects refer to an object: its event does not wake them")
		return keys
	}
	return append(keys, referring...)
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

// IndexKeys maps an object to the keys of the objects indexer holds under the object's own
// namespace/name in index: the objects of a kind that name it by a field (the EtcdClusters
// whose spec.tls names a Secret). index is one of the kind's Indexers, whose function gives
// the namespace/name of every object a kind's object names. One lookup per event, never a
// list of the kind's objects.
func IndexKeys(indexer cache.Indexer, index string) KeysFunc {
	return func(obj metav1.Object) ([]string, error) {
		keys, err := indexer.IndexKeys(index, objectKey(obj.GetNamespace(), obj.GetName()))
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", index, err)
		}
		return keys, nil
	}
}

// objectKey is the workqueue key of an object.
func objectKey(namespace, name string) string {
	return cache.NewObjectName(namespace, name).String()
}

// typeName names obj's dynamic type for logs.
func typeName(obj any) string { return fmt.Sprintf("%T", obj) }
