// Package controller turns informer events into reconcile passes, for any number of kinds of
// object on one set of shared informers. Each kind registers itself with a Kind: its own
// informer, how to tell whether an object of the kind still exists, its Syncer, and the
// informers of the objects it owns. Event handlers only map an object to the namespace/name
// of the object it belongs to and enqueue that key on the kind's rate-limited workqueue;
// workers pop keys and hand each to its object's own goroutine, which runs passes one at a
// time. The controller keeps no state that decides anything: each pass rebuilds its view
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
	"k8s.io/client-go/tools/cache"
)

// ErrGone is what a Syncer returns (wrapped or not) when its object no longer exists, or is
// being deleted and needs nothing more of it (a finalizer of its own it has removed, or none):
// the object's loop stops without retrying, and the pass is not counted as a failure. An
// object being deleted is still in the cache, and still passed to Sync, until its finalizers
// are gone; any event on it starts its loop again.
var ErrGone = errors.New("object no longer exists")

// Syncer runs reconcile passes of one kind; the controller calls it from one goroutine per
// object, so passes of one object never overlap, while passes of different objects run in
// parallel.
type Syncer interface {
	// Sync runs one pass for the object namespace/name and returns when it wants to run
	// again even if no event arrives (0: only on events and resyncs). A returned error is
	// retried with per-object exponential backoff. An error for which errors.Is(err, ErrGone)
	// holds means the object no longer exists: its loop stops without retrying. Sync must
	// return promptly once ctx is done; ctx is not cancelled when the controller starts
	// shutting down, only when the shutdown grace period has run out.
	Sync(ctx context.Context, namespace, name string) (requeueAfter time.Duration, err error)
}

// Forgetter is a Syncer that keeps something of an object between its passes (connections, a
// cache of answers): Forget is called once the object's loop has ended, after its last pass
// and before any later loop of the same key runs one, whether the object is gone, its loop
// was stopped on a delete event, or the controller shuts down. Nothing a Syncer decides may
// rest on what it keeps, so Forget only releases.
type Forgetter interface {
	Forget(namespace, name string)
}

// SyncFunc adapts a function to Syncer.
type SyncFunc func(ctx context.Context, namespace, name string) (time.Duration, error)

// Sync calls f.
func (f SyncFunc) Sync(ctx context.Context, namespace, name string) (time.Duration, error) {
	return f(ctx, namespace, name)
}

// Defaults of the Config fields left zero.
const (
	DefaultWorkers = 2
	// DefaultShutdownGrace fits, with the Lease release after it, in a pod's default
	// terminationGracePeriodSeconds of 30 s.
	DefaultShutdownGrace = 20 * time.Second
	DefaultBackoffBase   = 100 * time.Millisecond
	DefaultBackoffMax    = 30 * time.Second
)

// Config is what New needs.
type Config struct {
	// Kinds are the kinds the controller runs loops for, at least one, with distinct names.
	Kinds   []Kind
	Metrics *Metrics
	Log     *logrus.Entry

	// Workers pop keys and dispatch them to the loops, per kind (DefaultWorkers if 0). They
	// do no reconcile work themselves, so a few are enough for any number of objects.
	Workers int
	// ShutdownGrace is how long in-flight passes may run after shutdown starts before their
	// context is cancelled (DefaultShutdownGrace if 0).
	ShutdownGrace time.Duration
	// BackoffBase and BackoffMax bound the per-object retry delay after failed passes
	// (DefaultBackoffBase and DefaultBackoffMax if 0).
	BackoffBase, BackoffMax time.Duration
}

// Controller dispatches the keys of every registered kind to per-object loops.
type Controller struct {
	cfg    Config
	log    *logrus.Entry
	kinds  []*dispatcher
	synced []cache.InformerSynced

	// passCtx is handed to every pass; it outlives the Run context by the shutdown grace.
	// It is set by Run before any worker starts.
	passCtx context.Context
	// started is set once the caches have synced and the workers run.
	started atomic.Bool
}

// New builds a controller and registers the kinds' event handlers with their informers.
// Start the informers before or after New, then call Run.
func New(cfg Config) (*Controller, error) {
	if len(cfg.Kinds) == 0 || cfg.Metrics == nil || cfg.Log == nil {
		return nil, errors.New("controller config needs Kinds, Metrics and Log")
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
	c := &Controller{cfg: cfg, log: cfg.Log}
	if err := c.register(cfg.Kinds); err != nil {
		c.shutDownQueues()
		return nil, err
	}
	return c, nil
}

// register builds a dispatcher for each kind.
func (c *Controller) register(kinds []Kind) error {
	names := map[string]bool{}
	for _, k := range kinds {
		if names[k.Name] {
			return fmt.Errorf("registering kind %s: registered twice", k.Name)
		}
		names[k.Name] = true
		d, err := newDispatcher(c, k)
		if err != nil {
			return fmt.Errorf("registering kind %s: %w", k.Name, err)
		}
		c.kinds = append(c.kinds, d)
	}
	return nil
}

// Run dispatches work until ctx is done, then shuts down: the workers stop taking keys, each
// loop finishes its in-flight pass (whose context is cancelled only after the shutdown grace
// period) and exits. Run returns nil after a clean shutdown, and an error if the caches never
// synced or a loop outlived the grace period.
func (c *Controller) Run(ctx context.Context) error {
	passCtx, cancelPasses := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPasses()
	c.passCtx = passCtx

	c.log.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		c.shutDownQueues()
		return fmt.Errorf("waiting for informer caches to sync: %w", context.Cause(ctx))
	}
	c.log.WithField("workers", c.cfg.Workers).Info("Starting workers")
	var workers sync.WaitGroup
	for _, d := range c.kinds {
		for range c.cfg.Workers {
			workers.Go(func() {
				for d.processNextKey() {
				}
			})
		}
	}
	c.started.Store(true)

	<-ctx.Done()
	c.log.Info("Shutting down: no new work, waiting for in-flight passes")
	c.shutDownQueues()
	workers.Wait()
	return c.stopAllLoops(cancelPasses)
}

// HasSynced reports whether Run has seen the informer caches synced and started its workers.
// It stays true during shutdown.
func (c *Controller) HasSynced() bool { return c.started.Load() }

// shutDownQueues shuts every kind's workqueue down.
func (c *Controller) shutDownQueues() {
	for _, d := range c.kinds {
		d.queue.ShutDown()
	}
}

// abandonFloor is the least time stopAllLoops waits for loops whose passes it cancelled.
const abandonFloor = time.Second

// stopAllLoops stops every loop of every kind and waits for them to exit, cancelling the
// passes' context once the grace period has run out.
func (c *Controller) stopAllLoops(cancelPasses context.CancelFunc) error {
	var loops []*loop
	for _, d := range c.kinds {
		loops = append(loops, d.stopAll()...)
	}
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
	// misbehaving Sync from blocking the process's exit forever. Its floor leaves a loaded
	// machine time to schedule the loops' goroutines after a short grace period.
	abandon := time.NewTimer(max(c.cfg.ShutdownGrace/10, abandonFloor))
	defer abandon.Stop()
	select {
	case <-allDone:
		return nil
	case <-abandon.C:
		return errors.New("object loops did not stop after their passes were cancelled")
	}
}
