package controller

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// loop is one cluster's goroutine. It runs passes one at a time: when woken by an event or a
// resync, when the delay a pass asked for has elapsed, and after a failed pass when its
// backoff has elapsed. It decides nothing itself; Syncer.Sync does.
type loop struct {
	c                    *Controller
	key, namespace, name string
	log                  *logrus.Entry

	// wake holds at most one pending signal: any number of events between two passes
	// coalesce into one pass.
	wake chan struct{}
	// quit is closed when the loop must stop; the in-flight pass, if any, still finishes.
	quit chan struct{}
	// done is closed when the goroutine has exited, after prev is done.
	done chan struct{}
	// prev is the done channel of the stopped loop this one replaces (nil if none): two
	// loops of the same key must never run passes at the same time.
	prev <-chan struct{}
}

// wakeLoop signals the loop of key, starting it on first sight. A stopped loop that has not
// exited yet is replaced by a new one that first waits for it to exit.
func (c *Controller) wakeLoop(key, namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.loops[key]
	if !ok {
		l = &loop{
			c: c, key: key, namespace: namespace, name: name,
			log:  c.log.WithField("cluster", key),
			wake: make(chan struct{}, 1),
			quit: make(chan struct{}),
			done: make(chan struct{}),
		}
		if prev, exiting := c.exiting[key]; exiting {
			l.prev = prev.done
		}
		c.loops[key] = l
		c.cfg.Metrics.clustersManaged.Set(float64(len(c.loops)))
		l.log.Info("Starting cluster loop")
		go l.run(c.passCtx)
	}
	select {
	case l.wake <- struct{}{}:
	default: // a pass is already pending; it will see this event too
	}
}

// stopLoop stops the loop of key, if there is one.
func (c *Controller) stopLoop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.loops[key]; ok {
		l.log.Info("Cluster deleted; stopping its loop")
		c.stopLocked(l)
	}
}

// stopLocked moves l from the running loops to the exiting ones and tells it to quit.
// c.mu must be held.
func (c *Controller) stopLocked(l *loop) {
	if c.loops[l.key] != l {
		return
	}
	delete(c.loops, l.key)
	c.exiting[l.key] = l
	close(l.quit)
	c.cfg.Metrics.clustersManaged.Set(float64(len(c.loops)))
}

// run is the loop's goroutine.
func (l *loop) run(passCtx context.Context) {
	defer l.exit()
	if l.prev != nil {
		select {
		case <-l.prev:
		case <-l.quit:
			return
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		timerC  <-chan time.Time
		wakeC   = l.wake // nil while backing off: events then wait for the backoff
		backoff time.Duration
	)
	for {
		select {
		case <-l.quit:
			return
		case <-wakeC:
		case <-timerC:
		}
		select {
		case <-l.quit:
			return
		default:
		}
		// The pass reads the caches after this point, so it covers every signal so far.
		select {
		case <-l.wake:
		default:
		}
		requeueAfter, err := l.pass(passCtx)
		timer.Stop()
		timerC, wakeC = nil, l.wake
		switch {
		case errors.Is(err, cluster.ErrGone):
			l.log.Info("Cluster is gone; stopping its loop")
			l.gone()
			return
		case err != nil:
			backoff = l.nextBackoff(backoff)
			l.log.WithError(err).WithField("retry_in", backoff).Warn("Reconcile pass failed")
			timer.Reset(backoff)
			timerC, wakeC = timer.C, nil
		default:
			backoff = 0
			if requeueAfter > 0 {
				timer.Reset(requeueAfter)
				timerC = timer.C
			}
		}
	}
}

// pass runs one Sync and records its metrics.
func (l *loop) pass(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	requeueAfter, err := l.c.cfg.Syncer.Sync(ctx, l.namespace, l.name)
	elapsed := time.Since(start)
	l.c.cfg.Metrics.observePass(elapsed.Seconds(), err != nil && !errors.Is(err, cluster.ErrGone))
	l.log.WithFields(logrus.Fields{"duration": elapsed, "requeue_after": requeueAfter}).Debug("Reconcile pass done")
	return requeueAfter, err
}

// nextBackoff doubles the previous delay, from BackoffBase up to BackoffMax.
func (l *loop) nextBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return l.c.cfg.BackoffBase
	}
	return min(2*prev, l.c.cfg.BackoffMax)
}

// gone stops the loop after Sync reported the cluster gone. An event that arrived during that
// pass may be about a new cluster of the same name, so a pending signal goes back to the
// queue, where dispatch consults the cache again.
func (l *loop) gone() {
	l.c.mu.Lock()
	l.c.stopLocked(l)
	pending := len(l.wake) > 0
	l.c.mu.Unlock()
	if pending {
		l.c.queue.Add(l.key)
	}
}

// exit forgets the loop once its goroutine ends.
func (l *loop) exit() {
	if l.prev != nil {
		<-l.prev
	}
	l.c.mu.Lock()
	if l.c.exiting[l.key] == l {
		delete(l.c.exiting, l.key)
	}
	l.c.mu.Unlock()
	close(l.done)
	l.log.Debug("Cluster loop exited")
}
