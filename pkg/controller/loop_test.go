package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Failed passes are retried with growing delays, events do not cut a backoff short, and a
// success resets the backoff.
func TestFailedPassesBackOffThenSucceed(t *testing.T) {
	const (
		base     = 20 * time.Millisecond
		failures = 4 // passes 1..4 fail; pass 5 succeeds
	)
	s := newFakeSyncer()
	e := newEnv(t, s, func(c *Config) { c.BackoffBase, c.BackoffMax = base, 10*time.Second })
	key := objectKey("default", "flaky")
	var failNext atomic.Bool
	s.script = func(_ context.Context, k string, pass, observed int) (time.Duration, error) {
		// The fresh failure is the first pass that sees seq 6.
		fresh := observed == 6 && failNext.CompareAndSwap(true, false)
		if k == key && (pass <= failures || fresh) {
			return 0, fmt.Errorf("pass %d: %w", pass, errTransient)
		}
		return 0, nil
	}
	s.observe = e.seqObserver
	e.createCluster(t, "default", "flaky")

	// Events during the backoff must wait for it.
	eventually(t, 5*time.Second, "the first failed pass", func() bool { return s.passCount(key) >= 1 })
	for seq := 1; seq <= 5; seq++ {
		if err := e.setSeq("default", "flaky", seq); err != nil {
			t.Fatalf("updating cluster: %v", err)
		}
	}
	eventually(t, 10*time.Second, "a successful pass that saw every event", func() bool {
		return s.passCount(key) >= failures+1 && s.lastObserved(key) == 5
	})

	recs := s.records(key)
	want := base
	for i := 1; i <= failures; i++ {
		if gap := recs[i].start.Sub(recs[i-1].start); gap < want {
			t.Errorf("pass %d ran %v after pass %d, want at least the backoff %v", i+1, gap, i, want)
		}
		want *= 2
	}

	// A success resets the backoff: the next failure is retried after base again, not 2×160ms.
	failNext.Store(true)
	if err := e.setSeq("default", "flaky", 6); err != nil {
		t.Fatalf("updating cluster: %v", err)
	}
	eventually(t, 5*time.Second, "the retry after a fresh failure", func() bool {
		recs = s.records(key)
		return len(recs) >= 2 && recs[len(recs)-2].observed == 6 && failNext.Load() == false
	})
	first := len(recs) - 2
	for first > 0 && recs[first-1].observed == 6 {
		first--
	}
	if gap := recs[first+1].start.Sub(recs[first].start); gap < base || gap >= 8*base {
		t.Errorf("retry after a fresh failure came %v later, want the base backoff %v", gap, base)
	}

	if got := testutil.ToFloat64(e.metrics.reconcileErrors); got != failures+1 {
		t.Errorf("reconcile errors = %v, want %d", got, failures+1)
	}
	if got := testutil.CollectAndCount(e.metrics.reconcileDuration); got != 2 {
		t.Errorf("reconcile duration has %d series, want 2 (success, error)", got)
	}
}

// A pass that asks to run again gets another pass without any event.
func TestRequeueAfterRunsAgain(t *testing.T) {
	s := newFakeSyncer()
	e := newEnv(t, s, nil)
	s.script = func(_ context.Context, _ string, pass, _ int) (time.Duration, error) {
		if pass == 1 {
			return 30 * time.Millisecond, nil
		}
		return 0, nil
	}
	key := objectKey("default", "timed")
	e.createCluster(t, "default", "timed")
	eventually(t, 5*time.Second, "the requeued pass", func() bool { return s.passCount(key) >= 2 })
	recs := s.records(key)
	if gap := recs[1].start.Sub(recs[0].start); gap < 30*time.Millisecond {
		t.Errorf("requeued pass ran %v after the first, want at least 30ms", gap)
	}
}

// A Sync that reports the cluster gone stops the loop without retries.
func TestSyncReportsGone(t *testing.T) {
	s := newFakeSyncer()
	e := newEnv(t, s, nil)
	key := objectKey("default", "vanishing")
	s.script = func(_ context.Context, k string, _, _ int) (time.Duration, error) {
		if k == key {
			return time.Millisecond, fmt.Errorf("reading cluster: %w", ErrGone)
		}
		return 0, nil
	}
	e.createCluster(t, "default", "vanishing")
	eventually(t, 5*time.Second, "the loop to exit", func() bool {
		running, exiting := e.loopState(key)
		return s.passCount(key) == 1 && !running && !exiting
	})
	if got := testutil.ToFloat64(e.metrics.reconcileErrors); got != 0 {
		t.Errorf("reconcile errors = %v, want 0: a gone cluster is not a failure", got)
	}
	if got := s.forgotten(key); len(got) != 1 || got[0] != 1 {
		t.Errorf("the gone cluster was forgotten after %v passes, want once, after its one pass", got)
	}

	// The next event about that name consults the cache again and starts a new loop.
	if err := e.setSeq("default", "vanishing", 1); err != nil {
		t.Fatalf("updating cluster: %v", err)
	}
	eventually(t, 5*time.Second, "a new loop's pass", func() bool { return s.passCount(key) == 2 })
}

// Shutdown lets the in-flight pass finish with a live context, and Run returns only after it.
func TestShutdownFinishesInFlightPass(t *testing.T) {
	s := newFakeSyncer()
	started, release := make(chan struct{}), make(chan struct{})
	type outcome struct {
		ctxErr       error
		runReturned  bool
		shuttingDown bool
	}
	seen := make(chan outcome, 1)
	var e *env
	s.script = func(ctx context.Context, _ string, pass, _ int) (time.Duration, error) {
		if pass != 1 {
			return 0, nil
		}
		close(started)
		<-release
		returned := false
		select {
		case <-e.runDone:
			returned = true
		default:
		}
		seen <- outcome{ctx.Err(), returned, e.ctrl.kind("EtcdCluster").queue.ShuttingDown()}
		return 0, nil
	}
	e = newEnv(t, s, nil)
	e.createCluster(t, "default", "busy")
	<-started
	e.cancel()
	eventually(t, 5*time.Second, "the workqueue to shut down", e.ctrl.kind("EtcdCluster").queue.ShuttingDown)
	close(release)
	got := <-seen
	if got.ctxErr != nil {
		t.Errorf("in-flight pass's context was cancelled at shutdown: %v", got.ctxErr)
	}
	if got.runReturned {
		t.Error("Run returned before the in-flight pass finished")
	}
	if !got.shuttingDown {
		t.Error("pass finished before shutdown began; the test proves nothing")
	}
	e.stop(t)
}

// A pass still running when the grace period ends sees its context cancelled.
func TestShutdownGraceCancelsPass(t *testing.T) {
	const grace = 50 * time.Millisecond
	s := newFakeSyncer()
	started := make(chan struct{})
	s.script = func(ctx context.Context, _ string, _, _ int) (time.Duration, error) {
		close(started)
		<-ctx.Done()
		return 0, ctx.Err()
	}
	e := newEnv(t, s, func(c *Config) { c.ShutdownGrace = grace })
	e.createCluster(t, "default", "stuck")
	<-started
	begin := time.Now()
	e.stop(t)
	if took := time.Since(begin); took < grace {
		t.Errorf("Run returned %v after cancel, before the %v grace period", took, grace)
	}
}

func TestNextBackoff(t *testing.T) {
	l := &loop{d: &dispatcher{c: &Controller{cfg: Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 30 * time.Second}}}}
	var got []time.Duration
	d := time.Duration(0)
	for range 11 {
		d = l.nextBackoff(d)
		got = append(got, d)
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoff sequence = %v, want %v ms", got, want)
		}
	}
}

// A Sync that panics (a bug reached by one object) fails that pass like an error: its loop
// backs off and tries again, and the operator and the other objects' loops go on.
func TestPanickingPassIsRetried(t *testing.T) {
	s := newFakeSyncer()
	e := newEnv(t, s, func(c *Config) { c.BackoffBase, c.BackoffMax = 10*time.Millisecond, 40*time.Millisecond })
	bad := objectKey("default", "bad")
	var panics atomic.Int32
	s.script = func(_ context.Context, k string, _, _ int) (time.Duration, error) {
		if k == bad {
			panics.Add(1)
			var m map[string]int
			m["x"]++ // a nil map write: a runtime panic, as a nil dereference would be
		}
		return 0, nil
	}
	e.createCluster(t, "default", "bad")
	e.createCluster(t, "default", "good")
	eventually(t, 5*time.Second, "the panicking pass retried", func() bool { return panics.Load() >= 3 })
	good := objectKey("default", "good")
	eventually(t, 5*time.Second, "the other object's pass", func() bool { return s.passCount(good) >= 1 })
	// A pass's metrics are recorded after its Sync returns, so the count catches up with the
	// panics rather than matching them at the instant the third one is seen.
	eventually(t, 5*time.Second, "every panicked pass counted as a reconcile error", func() bool {
		return testutil.ToFloat64(e.metrics.reconcileErrors) >= 3
	})
}
