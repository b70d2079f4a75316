package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaseLost is returned when this replica stopped renewing its Lease while leading. The
// process must exit: another replica may already act, and a new process starts clean.
var ErrLeaseLost = errors.New("leader election lease lost")

// electedRun runs run while this replica holds the Lease.
//
// Shutdown order matters. When ctx ends (SIGTERM), run's context is cancelled and electedRun
// waits for run to return, that is for the in-flight passes to finish, and only then releases
// the Lease, so that the next leader never acts while this one still does. When the Lease is
// lost instead, electedRun returns ErrLeaseLost at once without waiting for run: the lease is
// gone, another replica may lead within moments, and every step of a pass is idempotent, so
// exiting mid-step is safe.
func electedRun(ctx context.Context, o *Options, kube kubernetes.Interface, watchdog *leaderelection.HealthzAdaptor,
	log *logrus.Entry, run func(context.Context) error) error {
	e := &election{ctx: ctx, run: run, log: log, finished: make(chan struct{})}
	// The elector gets its own context: it is cancelled, releasing the Lease, only after run
	// has returned.
	electorCtx, cancelElector := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElector()
	elector, err := e.newElector(o, kube, watchdog)
	if err != nil {
		return err
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electorCtx)
	}()
	log.WithFields(logrus.Fields{"lease": o.LeaseNamespace + "/" + o.LeaseName, "identity": o.Identity}).
		Info("Waiting to acquire the leader Lease")

	if electorEnded := e.wait(electorDone); electorEnded {
		return ErrLeaseLost
	}
	cancelElector()
	<-electorDone
	return e.result()
}

// election is what electedRun shares with the elector's callbacks.
type election struct {
	// ctx is electedRun's context: done on SIGTERM.
	ctx context.Context
	run func(context.Context) error
	log *logrus.Entry

	mu       sync.Mutex
	stopping bool // set on SIGTERM: leadership acquired later is not used
	leading  bool // set when run starts
	// finished is closed when run has returned; the elector starts leading at most once.
	finished chan struct{}
	// runErr and leaseLost are set before finished is closed.
	runErr    error
	leaseLost bool
}

// newElector configures the leader elector of the Lease o names, with e's callbacks.
func (e *election) newElector(o *Options, kube kubernetes.Interface, watchdog *leaderelection.HealthzAdaptor) (*leaderelection.LeaderElector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaseNamespace, Name: o.LeaseName},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Name:            o.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.onStarted,
			OnStoppedLeading: e.onStopped,
			OnNewLeader: func(identity string) {
				e.log.WithFields(logrus.Fields{"leader": identity, "self": identity == o.Identity}).Info("Leader observed")
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("configuring leader election: %w", err)
	}
	return elector, nil
}

// onStarted runs run while the Lease is held, unless SIGTERM came first.
func (e *election) onStarted(leaseCtx context.Context) {
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		return
	}
	e.leading = true
	e.mu.Unlock()
	defer close(e.finished)

	e.log.Info("Leading: starting the controller")
	runCtx, cancel := context.WithCancel(leaseCtx)
	defer cancel()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	e.runErr = e.run(runCtx)
	e.leaseLost = leaseCtx.Err() != nil && e.ctx.Err() == nil
}

// onStopped logs the end of a leadership that ran the controller.
func (e *election) onStopped() {
	e.mu.Lock()
	led := e.leading
	e.mu.Unlock()
	if led {
		e.log.Info("Stopped leading")
	}
}

// wait returns when the elector has ended on its own (true), when SIGTERM came and run, if it
// started, has returned, or when run ended while this replica still led.
func (e *election) wait(electorDone <-chan struct{}) (electorEnded bool) {
	select {
	case <-electorDone:
		return true
	case <-e.ctx.Done():
		e.mu.Lock()
		e.stopping = true
		led := e.leading
		e.mu.Unlock()
		if led {
			<-e.finished
		}
	case <-e.finished:
		// run ended while this replica still led: the lease was lost, or the controller
		// failed. Either way this process must not keep the Lease without acting.
	}
	return false
}

// result is electedRun's error once the elector has released the Lease.
func (e *election) result() error {
	switch {
	case e.leaseLost:
		return ErrLeaseLost
	case e.ctx.Err() == nil && e.runErr == nil:
		return errors.New("the controller stopped while leading")
	case e.ctx.Err() == nil:
		return fmt.Errorf("the controller stopped while leading: %w", e.runErr)
	}
	e.log.Info("Shut down and released the leader Lease, if held")
	return e.runErr
}
