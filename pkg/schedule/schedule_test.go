package schedule

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	listers "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// fakeWriter records every write of a pass.
type fakeWriter struct {
	created []*api.EtcdBackup
	deleted []string
	status  *api.EtcdBackupScheduleStatus
	events  []string
}

func (f *fakeWriter) CreateBackup(_ context.Context, b *api.EtcdBackup) error {
	f.created = append(f.created, b)
	return nil
}
func (f *fakeWriter) DeleteBackup(_ context.Context, _, name string, _ types.UID) error {
	f.deleted = append(f.deleted, name)
	return nil
}
func (f *fakeWriter) WriteStatus(_ context.Context, _ *api.EtcdBackupSchedule, st api.EtcdBackupScheduleStatus) error {
	f.status = &st
	return nil
}
func (f *fakeWriter) Event(_ *api.EtcdBackupSchedule, _ string, reason EventReason, msg string) {
	f.events = append(f.events, string(reason)+": "+msg)
}

// at is a time of 2026-01-01, UTC.
func at(hour, minute int) time.Time { return time.Date(2026, 1, 1, hour, minute, 0, 0, time.UTC) }

// newSchedule is the schedule "s" of namespace ns, created at 09:00, with the given spec
// fields.
func newSchedule(cron string, keep int32) *api.EtcdBackupSchedule {
	return &api.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "s-uid", Generation: 1,
			CreationTimestamp: metav1.Time{Time: at(9, 0)}},
		Spec: api.EtcdBackupScheduleSpec{Schedule: cron, Keep: keep, BackupTemplate: api.ScheduledBackupSpec{
			ClusterName: "example", Destination: api.BackupDestination{Volume: &api.VolumeDestination{ClaimName: "backups"}}}},
	}
}

// backupOf is the backup s created for the scheduled time t, in phase.
func backupOf(s *api.EtcdBackupSchedule, t time.Time, phase api.BackupPhase) *api.EtcdBackup {
	b := Backup(s, t)
	b.UID = types.UID(b.Name)
	b.CreationTimestamp = metav1.Time{Time: t}
	b.Status.Phase = phase
	if phase == api.BackupSucceeded || phase == api.BackupFailed {
		b.Status.CompletionTime = &metav1.Time{Time: t.Add(time.Minute)}
	}
	return b
}

// pass runs one pass of schedule s at now over the backups, and returns what it wrote.
func pass(t *testing.T, s *api.EtcdBackupSchedule, now time.Time, backups ...*api.EtcdBackup) (*fakeWriter, time.Duration, error) {
	t.Helper()
	schedules := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	objs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = schedules.Add(s)
	for _, b := range backups {
		_ = objs.Add(b)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	fw := &fakeWriter{}
	r := &Reconciler{w: fw, deps: Deps{Schedules: listers.NewEtcdBackupScheduleLister(schedules),
		Backups: listers.NewEtcdBackupLister(objs), Log: logrus.NewEntry(log), Now: func() time.Time { return now }}}
	after, err := r.Sync(context.Background(), s.Namespace, s.Name)
	return fw, after, err
}

func names(bs []*api.EtcdBackup) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

// passCase is one row of TestSchedulePass: a schedule and its backups, and what one pass at
// now writes.
type passCase struct {
	name    string
	s       *api.EtcdBackupSchedule
	now     time.Time
	backups []*api.EtcdBackup
	// created and deleted are the backups created and deleted, by name.
	created, deleted []string
	after            time.Duration
	// ready is the reason of the Ready condition written ("" if no status is written).
	ready api.ConditionReason
	// event is a substring of the one Event expected ("" for none).
	event string
}

// sched is newSchedule with a change.
func sched(cron string, keep int32, change func(*api.EtcdBackupSchedule)) *api.EtcdBackupSchedule {
	s := newSchedule(cron, keep)
	if change != nil {
		change(s)
	}
	return s
}

func TestSchedulePass(t *testing.T) {
	every5 := newSchedule("*/5 * * * *", 2)
	for _, tc := range []passCase{{
		name: "at its first time: one backup, named for that time (2026-01-01T09:05Z in minutes since 1970); next in 5 minutes",
		s:    every5, now: at(9, 5),
		created: []string{"s-29454305"}, after: 5 * time.Minute, ready: api.ReasonScheduled, event: "BackupCreated",
	}, {
		name: "before its time: nothing, until exactly the next time",
		s:    every5, now: at(9, 2).Add(30 * time.Second),
		after: 2*time.Minute + 30*time.Second, ready: api.ReasonScheduled,
	}, {
		name: "in its time zone: 02:00 in Paris is 01:00 UTC",
		s:    sched("0 2 * * *", 7, func(s *api.EtcdBackupSchedule) { s.Spec.TimeZone = "Europe/Paris" }), now: at(9, 30),
		after: 15*time.Hour + 30*time.Minute, ready: api.ReasonScheduled,
	}, {
		name: "missed while the operator was down: the most recent time once, no burst",
		s:    every5, now: at(9, 31), backups: []*api.EtcdBackup{backupOf(every5, at(9, 5), api.BackupSucceeded)},
		created: []string{BackupName("s", at(9, 30))}, after: 4 * time.Minute, ready: api.ReasonScheduled, event: "BackupCreated",
	}, {
		name: "missed by more than the starting deadline: none, and the next at its time",
		s:    sched("0 */6 * * *", 7, nil), now: at(13, 30), backups: []*api.EtcdBackup{backupOf(every5, at(6, 0), api.BackupSucceeded)},
		after: 4*time.Hour + 30*time.Minute, ready: api.ReasonScheduled, event: "MissedSchedule",
	}, {
		name: "the time already taken (status written, cache behind): not taken again",
		s: sched("*/5 * * * *", 2, func(s *api.EtcdBackupSchedule) {
			s.Status.LastScheduleTime = &metav1.Time{Time: at(9, 5)}
		}), now: at(9, 5).Add(2 * time.Second),
		after: 5*time.Minute - 2*time.Second, ready: api.ReasonScheduled,
	}, {
		name: "suspended: nothing made, no requeue",
		s:    sched("*/5 * * * *", 2, func(s *api.EtcdBackupSchedule) { s.Spec.Suspend = true }), now: at(9, 5),
		ready: api.ReasonSuspended,
	}, {
		name: "a backup still running: the next waits for it",
		s:    every5, now: at(9, 10), backups: []*api.EtcdBackup{backupOf(every5, at(9, 5), api.BackupRunning)},
		after: 5 * time.Minute, ready: api.ReasonScheduled,
	}, {
		name: "keep 2: the oldest Succeeded deleted, the newest 3 Failed kept",
		s:    every5, now: at(9, 32), backups: []*api.EtcdBackup{
			backupOf(every5, at(9, 5), api.BackupSucceeded), backupOf(every5, at(9, 10), api.BackupFailed),
			backupOf(every5, at(9, 15), api.BackupSucceeded), backupOf(every5, at(9, 20), api.BackupFailed),
			backupOf(every5, at(9, 25), api.BackupFailed), backupOf(every5, at(9, 30), api.BackupSucceeded)},
		deleted: []string{BackupName("s", at(9, 5))}, after: 3 * time.Minute, ready: api.ReasonScheduled, event: "BackupDeleted",
	}, {
		name: "Failed beyond the newest 3 deleted; a lone Succeeded kept",
		s:    sched("*/5 * * * *", 1, nil), now: at(9, 32), backups: []*api.EtcdBackup{
			backupOf(every5, at(9, 5), api.BackupSucceeded), backupOf(every5, at(9, 10), api.BackupFailed),
			backupOf(every5, at(9, 15), api.BackupFailed), backupOf(every5, at(9, 20), api.BackupFailed),
			backupOf(every5, at(9, 30), api.BackupFailed)},
		deleted: []string{BackupName("s", at(9, 10))}, after: 3 * time.Minute, ready: api.ReasonScheduled, event: "BackupDeleted",
	}, {
		name: "one being deleted is not counted: nothing more deleted",
		s:    every5, now: at(9, 32), backups: []*api.EtcdBackup{
			deleting(backupOf(every5, at(9, 5), api.BackupSucceeded)), backupOf(every5, at(9, 15), api.BackupSucceeded),
			backupOf(every5, at(9, 30), api.BackupSucceeded)},
		after: 3 * time.Minute, ready: api.ReasonScheduled,
	}, {
		name: "another owner's backups, and ones with no owner, are never deleted nor counted",
		s:    every5, now: at(9, 32), backups: []*api.EtcdBackup{
			foreign(backupOf(every5, at(9, 5), api.BackupSucceeded), "other-uid"),
			foreign(backupOf(every5, at(9, 10), api.BackupSucceeded), ""),
			backupOf(every5, at(9, 15), api.BackupSucceeded), backupOf(every5, at(9, 30), api.BackupSucceeded)},
		after: 3 * time.Minute, ready: api.ReasonScheduled,
	}, {
		name: "an invalid cron expression: InvalidSchedule, an Event, nothing made or deleted",
		s:    sched("61 * * * *", 1, nil), now: at(9, 32), backups: []*api.EtcdBackup{
			backupOf(every5, at(9, 5), api.BackupSucceeded), backupOf(every5, at(9, 30), api.BackupSucceeded)},
		ready: api.ReasonInvalidSchedule, event: "InvalidSchedule",
	}, {
		name: "an unknown time zone: InvalidSchedule",
		s:    sched("0 2 * * *", 7, func(s *api.EtcdBackupSchedule) { s.Spec.TimeZone = "Mars/Olympus_Mons" }), now: at(9, 32),
		ready: api.ReasonInvalidSchedule, event: "Mars/Olympus_Mons",
	}, {
		name: "a schedule that never fires: InvalidSchedule",
		s:    sched("0 0 30 2 *", 7, nil), now: at(9, 32),
		ready: api.ReasonInvalidSchedule, event: "no time in the next five years",
	}} {
		t.Run(tc.name, func(t *testing.T) { checkPass(t, tc) })
	}
}

// checkPass runs tc's pass and checks what it wrote.
func checkPass(t *testing.T, tc passCase) {
	t.Helper()
	fw, after, err := pass(t, tc.s, tc.now, tc.backups...)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := names(fw.created); !slices.Equal(got, tc.created) {
		t.Errorf("created %v, want %v", got, tc.created)
	}
	if !slices.Equal(fw.deleted, tc.deleted) {
		t.Errorf("deleted %v, want %v", fw.deleted, tc.deleted)
	}
	if after != tc.after {
		t.Errorf("requeue after %s, want %s", after, tc.after)
	}
	switch {
	case tc.event == "" && len(fw.events) > 0:
		t.Errorf("events %q, want none", fw.events)
	case tc.event != "" && (len(fw.events) != 1 || !strings.Contains(fw.events[0], tc.event)):
		t.Errorf("events %q, want one with %q", fw.events, tc.event)
	}
	if fw.status == nil {
		t.Fatalf("no status written, want Ready %s", tc.ready)
	}
	if c := findReady(*fw.status); c == nil || c.Reason != string(tc.ready) {
		t.Errorf("Ready %+v, want reason %s", c, tc.ready)
	}
	for _, b := range fw.created {
		if ref := metav1.GetControllerOf(b); ref == nil || ref.UID != tc.s.UID || b.Spec.DeletionPolicy != api.BackupDelete {
			t.Errorf("backup %s: controller %+v, deletionPolicy %s; want the schedule, Delete", b.Name, ref, b.Spec.DeletionPolicy)
		}
	}
}

// deleting is b with a deletionTimestamp.
func deleting(b *api.EtcdBackup) *api.EtcdBackup {
	b.DeletionTimestamp = &metav1.Time{Time: at(9, 31)}
	return b
}

// foreign is b controlled by the owner of that UID, or by none if uid is empty.
func foreign(b *api.EtcdBackup, uid types.UID) *api.EtcdBackup {
	b.OwnerReferences = nil
	if uid != "" {
		b.OwnerReferences = []metav1.OwnerReference{{APIVersion: "etcd.operator.dev/v1alpha1", Kind: KindName, Name: "s",
			UID: uid, Controller: new(true)}}
	}
	return b
}
