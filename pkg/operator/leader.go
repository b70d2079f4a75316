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
		stopping bool
		runDone  chan struct{} // closed when run returned; nil until leading
		runErr   error
	)
	onStarted := func(leaseCtx context.Context) {
		mu.Lock()
		if stopping {
			mu.Unlock()
			return
		}
		done := make(chan struct{})
		runDone = done
		mu.Unlock()
		defer close(done)

		log.Info("Leading: starting the controller")
		runCtx, cancel := context.WithCancel(leaseCtx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		runErr = run(runCtx)
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
				led := runDone != nil
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
	}
	mu.Lock()
	stopping = true
	done := runDone
	mu.Unlock()
	if done == nil {
		cancelElector()
		<-electorDone
		log.Info("Shut down while standing by")
		return nil
	}
	<-done
	cancelElector()
	<-electorDone
	log.Info("Released the leader Lease")
	return runErr
}
