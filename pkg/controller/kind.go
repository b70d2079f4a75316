package controller

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Kind registers one kind of object with the controller: each object of the kind gets its
// own loop, which runs the kind's Syncer. A new kind brings only its Kind and its Syncer; the
// handlers, queue, loops, backoff, shutdown and metrics are the controller's.
type Kind struct {
	// Name is the kind as an ownerReference names it ("EtcdCluster"). Lower-cased, it names
	// the kind's workqueue in the workqueue metrics (workqueue_*{name="etcdcluster"}).
	Name string
	// LogField is the log field that carries an object's namespace/name ("cluster"); the
	// lower-cased Name if empty.
	LogField string
	// Informer informs on the kind's objects. Every event, resyncs included, enqueues the
	// object's own key: a resync is how idle loops are woken periodically. It must be the
	// informer whose cache the Syncer reads, so that a pass woken by an event sees at least
	// the state that caused the event.
	Informer cache.SharedIndexInformer
	// Indexers are indexes on Informer that the Owned mappings read (IndexKeys): the
	// objects of the kind by the name of each object they refer to. They are added when the
	// controller is built, before the informers start.
	Indexers cache.Indexers
	// Exists reports whether the object namespace/name is in the kind's informer cache.
	// It returns false and no error when the object is not there (it was deleted): its loop
	// is then stopped. An error means the cache could not answer; the key is retried.
	Exists func(namespace, name string) (bool, error)
	// Syncer runs the passes of the kind's objects.
	Syncer Syncer
	// Owned are the informers of the objects that belong to objects of this kind, each with
	// how such an object names its owner. Their events wake the owner's loop.
	Owned []Owned
}

// Owned is an informer whose objects belong to objects of a Kind: to the one that owns them,
// to those that refer to them by name, or to both. An event enqueues every key either
// mapping gives; at least one of KeyOf and KeysOf is set.
type Owned struct {
	// Informer informs on the owned objects; it may be shared with other kinds.
	Informer cache.SharedIndexInformer
	// KeyOf maps an owned object to its owner's key (OwnerKey, LabelKey).
	KeyOf KeyFunc
	// KeysOf maps an object to the keys of the kind's objects that refer to it by name
	// (IndexKeys): a user's Secret, which no EtcdCluster owns, to every cluster that names it.
	KeysOf KeysFunc
}

// ListerExists adapts a lister's Get of one namespace/name to Kind.Exists: a NotFound error
// means the object does not exist, any other error is passed on.
func ListerExists[T any](get func(namespace, name string) (T, error)) func(namespace, name string) (bool, error) {
	return func(namespace, name string) (bool, error) {
		_, err := get(namespace, name)
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}

// dispatcher is one kind's machinery: its queue and the loops of its objects.
type dispatcher struct {
	c     *Controller
	kind  Kind
	log   *logrus.Entry
	field string
	queue workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// loops are the running loops by key.
	loops map[string]*loop
	// exiting are the loops told to stop whose goroutine may not have exited yet, by key;
	// only the latest per key: each loop exits only after the one it replaced.
	exiting map[string]*loop
}

// informerHandler is an event handler to register with an informer.
type informerHandler struct {
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandler
}

// newDispatcher checks k, builds its queue and registers its event handlers.
func newDispatcher(c *Controller, k Kind) (*dispatcher, error) {
	if k.Name == "" || k.Informer == nil || k.Exists == nil || k.Syncer == nil {
		return nil, errors.New("a kind needs Name, Informer, Exists and Syncer")
	}
	if err := c.cfg.Metrics.hasLoopGauge(k.Name); err != nil {
		return nil, err
	}
	if len(k.Indexers) > 0 {
		if err := k.Informer.AddIndexers(k.Indexers); err != nil {
			return nil, fmt.Errorf("adding the %s indexers: %w", k.Name, err)
		}
	}
	field := k.LogField
	if field == "" {
		field = strings.ToLower(k.Name)
	}
	d := &dispatcher{
		c: c, kind: k, field: field,
		log:     c.log.WithField("kind", k.Name),
		loops:   map[string]*loop{},
		exiting: map[string]*loop{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: strings.ToLower(k.Name), MetricsProvider: c.cfg.Metrics}),
	}
	handlers := []informerHandler{{k.Informer, d.kindHandler()}}
	for _, o := range k.Owned {
		if o.Informer == nil || (o.KeyOf == nil && o.KeysOf == nil) {
			d.queue.ShutDown()
			return nil, errors.New("an owned informer needs Informer, and KeyOf or KeysOf")
		}
		handlers = append(handlers, informerHandler{o.Informer, d.ownedHandler(o)})
	}
	for _, h := range handlers {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			d.queue.ShutDown()
			return nil, fmt.Errorf("adding event handler: %w", err)
		}
		c.synced = append(c.synced, h.informer.HasSynced, reg.HasSynced)
	}
	return d, nil
}

// processNextKey pops one key and dispatches it. It returns false once the queue shuts down.
func (d *dispatcher) processNextKey() bool {
	key, quit := d.queue.Get()
	if quit {
		return false
	}
	defer d.queue.Done(key)
	if err := d.dispatch(key); err != nil {
		d.log.WithField(d.field, key).WithError(err).Warn("Dispatching failed; retrying")
		d.queue.AddRateLimited(key)
		return true
	}
	d.queue.Forget(key)
	return true
}

// dispatch wakes the loop of the object key, creating it on first sight, or stops it when the
// object is no longer in the cache.
func (d *dispatcher) dispatch(key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		// A malformed key never becomes valid; retrying would not help.
		d.log.WithField(d.field, key).WithError(err).Error("Dropping malformed key")
		return nil
	}
	exists, err := d.kind.Exists(namespace, name)
	switch {
	case err != nil:
		return fmt.Errorf("getting %s %s from the cache: %w", d.kind.Name, key, err)
	case !exists:
		d.stopLoop(key)
		return nil
	}
	d.wakeLoop(key, namespace, name)
	return nil
}
