// Package schedule runs one EtcdBackupSchedule's pass: at each time of its cron schedule it
// creates an EtcdBackup from its template, which it owns and which package backup takes; it
// deletes the Succeeded backups it created beyond the newest spec.keep, and the Failed ones
// beyond the newest few; it writes what it saw to status and asks to run again at the next
// scheduled time.
//
// Nothing of a pass is remembered by the operator. The last scheduled time is read again on
// every pass from the backups the schedule owns (each carries its scheduled time) and from
// status; a backup's name is its scheduled time's, so a pass that follows a lost status
// write, a stale cache or an operator restart finds the backup of that time made already
// (AlreadyExists) and never makes a second. A schedule only ever deletes backups whose
// controller ownerReference is its own.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
	listers "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// Deps are what a Reconciler needs.
type Deps struct {
	Client    versioned.Interface
	Schedules listers.EtcdBackupScheduleLister
	Backups   listers.EtcdBackupLister
	Recorder  record.EventRecorder
	Log       *logrus.Entry
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Reconciler runs the passes of EtcdBackupSchedules.
type Reconciler struct {
	deps Deps
	w    writer
}

var _ controller.Syncer = (*Reconciler)(nil)

// NewReconciler returns a Reconciler that writes through the API server.
func NewReconciler(d Deps) *Reconciler {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Reconciler{deps: d, w: &apiWriter{client: d.Client, recorder: d.Recorder}}
}

// Sync runs one pass of the schedule namespace/name and asks to run again at its next
// scheduled time. It returns controller.ErrGone once the schedule is gone or being deleted:
// it holds no finalizer, and the garbage collector deletes the backups it owns.
func (r *Reconciler) Sync(ctx context.Context, namespace, name string) (time.Duration, error) {
	s, err := r.deps.Schedules.EtcdBackupSchedules(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, controller.ErrGone
	}
	if err != nil {
		return 0, fmt.Errorf("getting schedule from the cache: %w", err)
	}
	if s.DeletionTimestamp != nil {
		return 0, controller.ErrGone
	}
	backups, err := r.ownedBy(s)
	if err != nil {
		return 0, err
	}
	now := r.deps.Now()
	sched, err := parse(s.Spec)
	if err == nil && sched.Next(now).IsZero() {
		err = fmt.Errorf("schedule %q: %w", s.Spec.Schedule, errNeverRuns)
	}
	if err != nil {
		// Nothing is created or deleted until the spec changes, which wakes the loop.
		return 0, r.invalid(ctx, s, backups, now, err)
	}
	errs := []error{r.retain(ctx, s, backups)}
	created, err := r.take(ctx, s, sched, backups, now)
	errs = append(errs, err)
	st := status(s, backups, created, now, sched)
	errs = append(errs, r.writeStatus(ctx, s, st))
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if s.Spec.Suspend {
		return 0, nil
	}
	return sched.Next(now).Sub(now), nil
}

// ownedBy are the backups of s's namespace whose controller ownerReference is s.
func (r *Reconciler) ownedBy(s *api.EtcdBackupSchedule) ([]owned, error) {
	all, err := r.deps.Backups.EtcdBackups(s.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing backups from the cache: %w", err)
	}
	var out []owned
	for _, b := range all {
		if ref := metav1.GetControllerOf(b); ref != nil && ref.UID == s.UID {
			out = append(out, ownedOf(b))
		}
	}
	return out, nil
}

// retain deletes the backups retention no longer keeps, each only if it is still the one
// seen (UID precondition).
func (r *Reconciler) retain(ctx context.Context, s *api.EtcdBackupSchedule, backups []owned) error {
	var errs []error
	for _, b := range expired(backups, s.Spec.Keep) {
		if err := r.w.DeleteBackup(ctx, s.Namespace, b.name, b.uid); err != nil {
			errs = append(errs, err)
			continue
		}
		msg := fmt.Sprintf("deleted %s backup %s, of %s: beyond the newest %d kept", b.phase, b.name,
			b.scheduled.UTC().Format(time.RFC3339), keptOf(b.phase, s.Spec.Keep))
		r.log(s).WithFields(logrus.Fields{"backup": b.name, "phase": b.phase}).Info("Deleted a backup beyond retention")
		r.w.Event(s, corev1.EventTypeNormal, EventBackupDeleted, msg)
	}
	return errors.Join(errs...)
}

// keptOf is how many backups of phase retention keeps.
func keptOf(phase api.BackupPhase, keep int32) int {
	if phase == api.BackupFailed {
		return keepFailed
	}
	return int(max(keep, 1))
}

// take creates the backup of the scheduled time due at now, if any, unless the schedule is
// suspended or a backup of it is still running (the time is then taken when it ends, if it
// is still within the starting deadline). It returns the scheduled time taken.
func (r *Reconciler) take(ctx context.Context, s *api.EtcdBackupSchedule, sched cron.Schedule, backups []owned, now time.Time) (time.Time, error) {
	if s.Spec.Suspend || len(active(backups)) > 0 {
		return time.Time{}, nil
	}
	var last time.Time
	if s.Status.LastScheduleTime != nil {
		last = s.Status.LastScheduleTime.Time
	}
	at, missed := due(sched, lastScheduled(s.CreationTimestamp.Time, last, backups), now)
	if missed {
		r.log(s).WithField("deadline", startingDeadline).Info("A scheduled time was missed by more than the starting deadline; waiting for the next")
		r.w.Event(s, corev1.EventTypeWarning, EventMissedSchedule,
			fmt.Sprintf("a scheduled time was missed by more than %s and is not taken; the next is %s", startingDeadline, sched.Next(now).UTC().Format(time.RFC3339)))
	}
	if at.IsZero() {
		return time.Time{}, nil
	}
	b := Backup(s, at)
	if err := r.w.CreateBackup(ctx, b); err != nil {
		return time.Time{}, err
	}
	r.log(s).WithFields(logrus.Fields{"backup": b.Name, "scheduled": at}).Info("Created a scheduled backup")
	r.w.Event(s, corev1.EventTypeNormal, EventBackupCreated,
		fmt.Sprintf("created backup %s of %s for %s", b.Name, b.Spec.ClusterName, at.UTC().Format(time.RFC3339)))
	return at, nil
}

// invalid reports a schedule that cannot be read: Ready False with reason InvalidSchedule,
// and an Event when that is new.
func (r *Reconciler) invalid(ctx context.Context, s *api.EtcdBackupSchedule, backups []owned, now time.Time, cause error) error {
	st := status(s, backups, time.Time{}, now, nil)
	setReady(&st, now, metav1.ConditionFalse, api.ReasonInvalidSchedule, cause.Error())
	if c := findReady(s.Status); c == nil || c.Reason != string(api.ReasonInvalidSchedule) || c.Message != cause.Error() {
		r.log(s).WithError(cause).Warn("Invalid schedule: no backup is taken")
		r.w.Event(s, corev1.EventTypeWarning, EventInvalidSchedule, cause.Error()+": no backup is taken until the spec is fixed")
	}
	return r.writeStatus(ctx, s, st)
}

func (r *Reconciler) log(s *api.EtcdBackupSchedule) *logrus.Entry {
	return r.deps.Log.WithField("schedule", s.Namespace+"/"+s.Name)
}
