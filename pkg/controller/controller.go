// Package controller turns informer events into reconcile passes. Event handlers only map an
// object to the namespace/name of its EtcdCluster and enqueue that key; workers pop keys from
// a rate-limited workqueue and hand each to its cluster's own goroutine, which runs passes one
// at a time. The controller keeps no state that decides anything: each pass rebuilds its view
// from the informer caches, so an operator restarted at any instant picks up where it was.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	etcdlisters "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// Syncer runs reconcile passes; the controller calls it from one goroutine per cluster, so
// passes of one cluster never overlap, while passes of different clusters run in parallel.
type Syncer interface {
	// Sync runs one pass for the EtcdCluster namespace/name and returns when it wants to run
	// again even if no event arrives (0: only on events and resyncs). A returned error is
	// retried with per-cluster exponential backoff. An error for which errors.Is(err, cluster.ErrGone)
	// holds means the cluster no longer exists: its loop stops without retrying. Sync must
	// return promptly once ctx is done; ctx is not cancelled when the controller starts
	// shutting down, only when the shutdown grace period has run out.
	Sync(ctx context.Context, namespace, name string) (requeueAfter time.Duration, err error)
}

// Defaults of the Config fields left zero.
const (
	DefaultWorkers = 2
	// DefaultShutdownGrace fits, with the Lease release after it, in a pod's default
	// terminationGracePeriodSeconds of 30 s.
	DefaultShutdownGrace = 20 * time.Second
	DefaultBackoffBase   = 100 * time.Millisecond
	DefaultBackoffMax    = 30 * time.Second
	// QueueName names the workqueue in its metrics (workqueue_*{name="etcdcluster"}).
	QueueName = "etcdcluster"
)

// Config is what New needs. Informers must be the ones the Syncer reads from, so that a
// pass woken by an event sees at least the state that caused the event.
type Config struct {
	Informers *Informers
	Syncer    Syncer
	Metrics   *Metrics
	Log       *logrus.Entry

	// Workers pop keys and dispatch them to the cluster loops (DefaultWorkers if 0). They do
	// no reconcile work themselves, so a few are enough for any number of clusters.
	Workers int
	// ShutdownGrace is how long in-flight passes may run after shutdown starts before their
	// context is cancelled (DefaultShutdownGrace if 0).
	ShutdownGrace time.Duration
	// BackoffBase and BackoffMax bound the per-cluster retry delay after failed passes
	// (DefaultBackoffBase and DefaultBackoffMax if 0).
	BackoffBase, BackoffMax time.Duration
}

// Controller dispatches EtcdCluster keys to per-cluster loops.
type Controller struct {
	cfg      Config
	log      *logrus.Entry
	clusters etcdlisters.EtcdClusterLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// loops are the running cluster loops by key.
	loops map[string]*loop
	// exiting are the loops told to stop whose goroutine may not have exited yet, by key;
	// only the latest per key: each loop exits only after the one it replaced.
	exiting map[string]*loop
	// passCtx is handed to every pass; it outlives the Run context by the shutdown grace.
	passCtx context.Context
	// started is set once the caches have synced and the workers run.
	started atomic.Bool
}

// New builds a controller and registers its event handlers with the informers. Start the
// informers (Informers.Start) before or after New, then call Run.
func New(cfg Config) (*Controller, error) {
	if cfg.Informers == nil || cfg.Syncer == nil || cfg.Metrics == nil || cfg.Log == nil {
		return nil, errors.New("controller config needs Informers, Syncer, Metrics and Log")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = DefaultBackoffBase
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = DefaultBackoffMax
	}
	c := &Controller{
		cfg:      cfg,
		log:      cfg.Log,
		clusters: cfg.Informers.Clusters.Lister(),
		loops:    map[string]*loop{},
		exiting:  map[string]*loop{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, MetricsProvider: cfg.Metrics}),
	}
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{cfg.Informers.Clusters.Informer(), c.clusterHandler()},
		{cfg.Informers.Pods.Informer(), c.ownedHandler(ownerClusterKey)},
		{cfg.Informers.Services.Informer(), c.ownedHandler(ownerClusterKey)},
		{cfg.Informers.EndpointSlices.Informer(), c.ownedHandler(labelClusterKey)},
		{cfg.Informers.Budgets.Informer(), c.ownedHandler(ownerClusterKey)},
		{cfg.Informers.NetworkPolicies.Informer(), c.ownedHandler(ownerClusterKey)},
		// Claims kept with whenDeleted Retain have no owner: their label names the cluster.
		{cfg.Informers.Claims.Informer(), c.ownedHandler(labelClusterKey)},
	}
	for _, h := range handlers {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("adding event handler: %w", err)
		}
		c.synced = append(c.synced, h.informer.HasSynced, reg.HasSynced)
	}
	return c, nil
}

// Run dispatches work until ctx is done, then shuts down: the workers stop taking keys, each
// loop finishes its in-flight pass (whose context is cancelled only after the shutdown grace
// period) and exits. Run returns nil after a clean shutdown, and an error if the caches never
// synced or a loop outlived the grace period.
func (c *Controller) Run(ctx context.Context) error {
	passCtx, cancelPasses := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPasses()
	c.mu.Lock()
	c.passCtx = passCtx
	c.mu.Unlock()

	c.log.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		c.queue.ShutDown()
		return fmt.Errorf("waiting for informer caches to sync: %w", context.Cause(ctx))
	}
	c.log.WithField("workers", c.cfg.Workers).Info("Starting workers")
	var workers sync.WaitGroup
	for range c.cfg.Workers {
		workers.Go(func() {
			for c.processNextKey() {
			}
		})
	}
	c.started.Store(true)

	<-ctx.Done()
	c.log.Info("Shutting down: no new work, waiting for in-flight passes")
	c.queue.ShutDown()
	workers.Wait()
	return c.stopAllLoops(cancelPasses)
}

// HasSynced reports whether Run has seen the informer caches synced and started its workers.
// It stays true during shutdown.
func (c *Controller) HasSynced() bool { return c.started.Load() }

// stopAllLoops stops every loop and waits for them to exit, cancelling the passes' context
// once the grace period has run out.
func (c *Controller) stopAllLoops(cancelPasses context.CancelFunc) error {
	c.mu.Lock()
	for _, l := range c.loops {
		c.stopLocked(l)
	}
	loops := make([]*loop, 0, len(c.exiting))
	for _, l := range c.exiting {
		loops = append(loops, l)
	}
	c.mu.Unlock()

	allDone := make(chan struct{})
	go func() {
		for _, l := range loops {
			<-l.done
		}
		close(allDone)
	}()
	grace := time.NewTimer(c.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-allDone:
		return nil
	case <-grace.C:
	}
	c.log.WithField("grace", c.cfg.ShutdownGrace).Warn("In-flight passes outlived the shutdown grace period; cancelling them")
	cancelPasses()
	// Sync honours its context, so the loops exit promptly now; the bound only keeps a
	// misbehaving Sync from blocking the process's exit forever.
	abandon := time.NewTimer(c.cfg.ShutdownGrace / 10)
	defer abandon.Stop()
	select {
	case <-allDone:
		return nil
	case <-abandon.C:
		return errors.New("cluster loops did not stop after their passes were cancelled")
	}
}

// processNextKey pops one key and dispatches it. It returns false once the queue shuts down.
func (c *Controller) processNextKey() bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.dispatch(key); err != nil {
		c.log.WithField("cluster", key).WithError(err).Warn("Dispatching cluster failed; retrying")
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// dispatch wakes the loop of the cluster key, creating it on first sight, or stops it when the
// EtcdCluster is no longer in the cache.
func (c *Controller) dispatch(key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		// A malformed key never becomes valid; retrying would not help.
		c.log.WithField("cluster", key).WithError(err).Error("Dropping malformed key")
		return nil
	}
	_, err = c.clusters.EtcdClusters(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		c.stopLoop(key)
		return nil
	case err != nil:
		return fmt.Errorf("getting cluster %s from the cache: %w", key, err)
	}
	c.wakeLoop(key, namespace, name)
	return nil
}
