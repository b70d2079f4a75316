package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sirupsen/logrus"
)

// loop is one object's goroutine. It runs passes one at a time: when woken by an event or a
// resync, when the delay a pass asked for has elapsed, and after a failed pass when its
// backoff has elapsed. It decides nothing itself; its kind's Syncer does.
type loop struct {
	d                    *dispatcher
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
func (d *dispatcher) wakeLoop(key, namespace, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.loops[key]
	if !ok {
		l = &loop{
			d: d, key: key, namespace: namespace, name: name,
			log:  d.log.WithField(d.field, key),
			wake: make(chan struct{}, 1),
			quit: make(chan struct{}),
			done: make(chan struct{}),
		}
		if prev, exiting := d.exiting[key]; exiting {
			l.prev = prev.done
		}
		d.loops[key] = l
		d.c.cfg.Metrics.setLoops(d.kind.Name, len(d.loops))
		l.log.Info("Starting loop")
		go l.run(d.c.passCtx)
	}
	select {
	case l.wake <- struct{}{}:
	default: // a pass is already pending; it will see this event too
	}
}

// stopLoop stops the loop of key, if there is one.
func (d *dispatcher) stopLoop(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.loops[key]; ok {
		l.log.Info("Object deleted; stopping its loop")
		d.stopLocked(l)
	}
}

// stopAll stops every running loop and returns the loops that may not have exited yet.
func (d *dispatcher) stopAll() []*loop {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.loops {
		d.stopLocked(l)
	}
	loops := make([]*loop, 0, len(d.exiting))
	for _, l := range d.exiting {
		loops = append(loops, l)
	}
	return loops
}

// stopLocked moves l from the running loops to the exiting ones and tells it to quit.
// d.mu must be held.
func (d *dispatcher) stopLocked(l *loop) {
	if d.loops[l.key] != l {
		return
	}
	delete(d.loops, l.key)
	d.exiting[l.key] = l
	close(l.quit)
	d.c.cfg.Metrics.setLoops(d.kind.Name, len(d.loops))
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
		case errors.Is(err, ErrGone):
			l.log.Info("Object is gone; stopping its loop")
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
	requeueAfter, err := l.sync(ctx)
	elapsed := time.Since(start)
	l.d.c.cfg.Metrics.observePass(elapsed.Seconds(), err != nil && !errors.Is(err, ErrGone))
	l.log.WithFields(logrus.Fields{"duration": elapsed, "requeue_after": requeueAfter}).Debug("Reconcile pass done")
	return requeueAfter, err
}

// sync runs Sync, a panic in it turned into the pass's error: a bug one object reaches stops
// neither the operator nor the other objects' loops, and that object is tried again with
// backoff. A pass is safe to stop at any instant (the operator may be killed at any), and its
// locks are released as the panic unwinds.
func (l *loop) sync(ctx context.Context) (requeueAfter time.Duration, err error) {
	defer func() {
		if r := recover(); r != nil {
			l.log.WithField("stack", string(debug.Stack())).Errorf("Reconcile pass panicked: %v", r)
			requeueAfter, err = 0, fmt.Errorf("reconcile pass panicked: %v", r)
		}
	}()
	return l.d.kind.Syncer.Sync(ctx, l.namespace, l.name)
}

// nextBackoff doubles the previous delay, from BackoffBase up to BackoffMax.
func (l *loop) nextBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return l.d.c.cfg.BackoffBase
	}
	return min(2*prev, l.d.c.cfg.BackoffMax)
}

// gone stops the loop after Sync reported the object gone. An event that arrived during that
// pass may be about a new object of the same name, so a pending signal goes back to the
// queue, where dispatch consults the cache again.
func (l *loop) gone() {
	l.d.mu.Lock()
	l.d.stopLocked(l)
	pending := len(l.wake) > 0
	l.d.mu.Unlock()
	if pending {
		l.d.queue.Add(l.key)
	}
}

// exit forgets the loop once its goroutine ends, and has the Syncer forget the object.
func (l *loop) exit() {
	if l.prev != nil {
		<-l.prev
	}
	if f, ok := l.d.kind.Syncer.(Forgetter); ok {
		f.Forget(l.namespace, l.name)
	}
	l.d.mu.Lock()
	if l.d.exiting[l.key] == l {
		delete(l.d.exiting, l.key)
	}
	l.d.mu.Unlock()
	close(l.done)
	l.log.Debug("Loop exited")
}
