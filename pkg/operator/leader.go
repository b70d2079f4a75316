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
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaseNamespace, Name: o.LeaseName},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	var (
		mu       sync.Mutex
		stopping bool // set on SIGTERM: leadership acquired later is not used
		leading  bool // set when run starts
		// finished is closed when run has returned; the elector starts leading at most once.
		finished  = make(chan struct{})
		runErr    error
		leaseLost bool
	)
	onStarted := func(leaseCtx context.Context) {
		mu.Lock()
		if stopping {
			mu.Unlock()
			return
		}
		leading = true
		mu.Unlock()
		defer close(finished)

		log.Info("Leading: starting the controller")
		runCtx, cancel := context.WithCancel(leaseCtx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		runErr = run(runCtx)
		leaseLost = leaseCtx.Err() != nil && ctx.Err() == nil
	}
	// The elector gets its own context: it is cancelled, releasing the Lease, only after run
	// has returned.
	electorCtx, cancelElector := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElector()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Name:            o.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: onStarted,
			OnStoppedLeading: func() {
				mu.Lock()
				led := leading
				mu.Unlock()
				if led {
					log.Info("Stopped leading")
				}
			},
			OnNewLeader: func(identity string) {
				log.WithFields(logrus.Fields{"leader": identity, "self": identity == o.Identity}).Info("Leader observed")
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electorCtx)
	}()
	log.WithFields(logrus.Fields{"lease": o.LeaseNamespace + "/" + o.LeaseName, "identity": o.Identity}).
		Info("Waiting to acquire the leader Lease")

	select {
	case <-electorDone:
		return ErrLeaseLost
	case <-ctx.Done():
		mu.Lock()
		stopping = true
		led := leading
		mu.Unlock()
		if led {
			<-finished
		}
	case <-finished:
		// run ended while this replica still led: the lease was lost, or the controller
		// failed. Either way this process must not keep the Lease without acting.
	}
	cancelElector()
	<-electorDone
	switch {
	case leaseLost:
		return ErrLeaseLost
	case ctx.Err() == nil && runErr == nil:
		return errors.New("the controller stopped while leading")
	case ctx.Err() == nil:
		return fmt.Errorf("the controller stopped while leading: %w", runErr)
	}
	log.Info("Shut down and released the leader Lease, if held")
	return runErr
}
