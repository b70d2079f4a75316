package operator

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// testOptions has short leases, yet long enough that a renewal delayed by a loaded machine
// (the race detector, every package's tests at once on two cores) is not mistaken for a lost
// lease: with a 1 s lease and a 500 ms renew deadline, the handover test lost its lease now
// and then under make unit.
func testOptions(identity string) *Options {
	return &Options{
		LeaderElect: true, LeaseName: "etcd-operator", LeaseNamespace: "ops", Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
	}
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// replica runs electedRun with a run function that reports when it starts and returns only
// when released.
type replica struct {
	cancel  context.CancelFunc
	started chan struct{}
	release chan struct{}
	done    chan error
}

func startReplica(kube *k8sfake.Clientset, identity string) *replica {
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, started: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		r.done <- electedRun(ctx, testOptions(identity), kube, nil, quietLog(), func(runCtx context.Context) error {
			close(r.started)
			<-runCtx.Done()
			<-r.release // the in-flight pass finishing
			return nil
		})
	}()
	return r
}

func leaseHolder(t *testing.T, kube *k8sfake.Clientset) string {
	t.Helper()
	lease, err := kube.CoordinationV1().Leases("ops").Get(context.Background(), "etcd-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Only the holder runs; on SIGTERM it keeps the Lease until its run has returned, then
// releases it and the standby takes over without waiting for the lease to expire.
func TestElectedRunHandsOverAfterInFlightWork(t *testing.T) {
	kube := k8sfake.NewClientset()
	a := startReplica(kube, "a")
	released := false
	t.Cleanup(func() {
		// A failed check must not leave a's elector running into later tests.
		a.cancel()
		if !released {
			close(a.release)
			<-a.done
		}
	})
	waitClosed(t, a.started, "replica a to lead")
	b := startReplica(kube, "b")
	t.Cleanup(func() {
		b.cancel()
		close(b.release)
		<-b.done
	})

	a.cancel()
	// While a's in-flight work runs, a keeps renewing and b cannot lead.
	deadline := time.Now().Add(2 * testOptions("a").LeaseDuration)
	for time.Now().Before(deadline) {
		if got := leaseHolder(t, kube); got != "a" {
			t.Fatalf("lease held by %q while a's work was still in flight", got)
		}
		select {
		case <-b.started:
			t.Fatal("b started leading while a's work was still in flight")
		case <-time.After(100 * time.Millisecond): // polling interval
		}
	}
	releasedAt := time.Now()
	close(a.release)
	released = true
	if err := <-a.done; err != nil {
		t.Errorf("electedRun of a = %v, want nil", err)
	}
	waitClosed(t, b.started, "replica b to take over")
	if took := time.Since(releasedAt); took >= testOptions("b").LeaseDuration/2 {
		t.Errorf("b took over %v after a finished: the lease was not released", took)
	}
}

// A leader that cannot renew returns ErrLeaseLost without waiting for its work.
func TestElectedRunReturnsWhenLeaseLost(t *testing.T) {
	kube := k8sfake.NewClientset()
	// Reactors must be in place before the clientset is used: the list is not thread-safe.
	var unreachable atomic.Bool
	kube.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if unreachable.Load() {
			return true, nil, errors.New("apiserver unreachable")
		}
		return false, nil, nil
	})
	a := startReplica(kube, "a")
	t.Cleanup(func() {
		a.cancel()
		close(a.release)
	})
	waitClosed(t, a.started, "replica a to lead")
	unreachable.Store(true)
	select {
	case err := <-a.done:
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("electedRun = %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("electedRun did not return after the lease could not be renewed")
	}
}

// Shutting down before ever leading returns at once.
func TestElectedRunStandbyShutdown(t *testing.T) {
	kube := k8sfake.NewClientset()
	a := startReplica(kube, "a")
	waitClosed(t, a.started, "replica a to lead")
	b := startReplica(kube, "b")
	b.cancel()
	select {
	case err := <-b.done:
		if err != nil {
			t.Errorf("standby electedRun = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("standby did not return after cancel")
	}
	a.cancel()
	close(a.release)
	if err := <-a.done; err != nil {
		t.Errorf("electedRun of a = %v, want nil", err)
	}
}

// A controller that fails while leading makes electedRun release the Lease and fail, rather
// than keep the Lease without acting.
func TestElectedRunControllerFailure(t *testing.T) {
	kube := k8sfake.NewClientset()
	errBoom := errors.New("informer setup failed")
	done := make(chan error, 1)
	go func() {
		done <- electedRun(context.Background(), testOptions("a"), kube, nil, quietLog(),
			func(context.Context) error { return errBoom })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errBoom) {
			t.Errorf("electedRun = %v, want it to wrap the controller's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("electedRun did not return after the controller failed")
	}
	if holder := leaseHolder(t, kube); holder != "" {
		t.Errorf("lease still held by %q after the controller failed", holder)
	}
}
