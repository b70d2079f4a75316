package schedule

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// status is s's status after a pass at now that saw backups and took the scheduled time
// created (zero if none); sched is nil when the schedule cannot be read, and the caller then
// sets Ready.
func status(s *api.EtcdBackupSchedule, backups []owned, created, now time.Time, sched cron.Schedule) api.EtcdBackupScheduleStatus {
	st := api.EtcdBackupScheduleStatus{
		ObservedGeneration: s.Generation,
		Conditions:         slices.Clone(s.Status.Conditions),
		Active:             active(backups),
	}
	last := lastScheduled(time.Time{}, timeOf(s.Status.LastScheduleTime), backups)
	if created.After(last) {
		last = created
	}
	if created != (time.Time{}) && !slices.Contains(st.Active, BackupName(s.Name, created)) {
		st.Active = append(st.Active, BackupName(s.Name, created))
		slices.Sort(st.Active)
	}
	st.LastScheduleTime = stamp(last)
	st.LastSuccessfulTime = stamp(lastSucceeded(timeOf(s.Status.LastSuccessfulTime), backups))
	if sched == nil {
		return st
	}
	if s.Spec.Suspend {
		setReady(&st, now, metav1.ConditionFalse, api.ReasonSuspended, "spec.suspend is true: no backup is taken")
		return st
	}
	st.NextScheduleTime = stamp(sched.Next(now))
	zone := s.Spec.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	setReady(&st, now, metav1.ConditionTrue, api.ReasonScheduled,
		fmt.Sprintf("backups of %s at %q in %s, the newest %d Succeeded kept", s.Spec.BackupTemplate.ClusterName, s.Spec.Schedule, zone, max(s.Spec.Keep, 1)))
	return st
}

// setReady sets the Ready condition of st; its transition time is now when its status
// changes.
func setReady(st *api.EtcdBackupScheduleStatus, now time.Time, status metav1.ConditionStatus, reason api.ConditionReason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(api.ScheduleConditionReady), Status: status, Reason: string(reason), Message: msg,
		ObservedGeneration: st.ObservedGeneration, LastTransitionTime: *stamp(now),
	})
}

// findReady is the Ready condition of st, nil if none.
func findReady(st api.EtcdBackupScheduleStatus) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, string(api.ScheduleConditionReady))
}

// writeStatus writes st as s's status if it differs from what s has.
func (r *Reconciler) writeStatus(ctx context.Context, s *api.EtcdBackupSchedule, st api.EtcdBackupScheduleStatus) error {
	if apiequality.Semantic.DeepEqual(s.Status, st) {
		return nil
	}
	return r.w.WriteStatus(ctx, s, st)
}

// timeOf is t's time, zero if t is nil.
func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// stamp is t as status stores it (whole seconds, UTC), nil if t is zero.
func stamp(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t.UTC().Truncate(time.Second)}
}
