package schedule

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	"github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	listers "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

func TestDue(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cron       string
		last, now  time.Time
		want       time.Time
		wantMissed bool
	}{
		{"nothing yet", "0 * * * *", at(9, 0), at(9, 59), time.Time{}, false},
		{"exactly at the time", "0 * * * *", at(9, 0), at(10, 0), at(10, 0), false},
		{"the time of last is not taken again", "0 * * * *", at(10, 0), at(10, 0).Add(time.Second), time.Time{}, false},
		{"three hours missed: the most recent alone", "*/1 * * * *", at(9, 0), at(12, 0).Add(30 * time.Second), at(12, 0), false},
		{"missed 59 minutes ago: taken", "0 */2 * * *", at(8, 0), at(10, 59), at(10, 0), false},
		{"missed an hour ago: too late", "0 */2 * * *", at(8, 0), at(11, 0), time.Time{}, true},
		{"missed 3 hours ago, none since: too late", "0 */6 * * *", at(0, 0), at(9, 0), time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(api.EtcdBackupScheduleSpec{Schedule: tc.cron})
			if err != nil {
				t.Fatal(err)
			}
			got, missed := due(s, tc.last, tc.now)
			if !got.Equal(tc.want) || missed != tc.wantMissed {
				t.Errorf("due = %s, missed %v; want %s, %v", got, missed, tc.want, tc.wantMissed)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		cron, zone string
		ok         bool
	}{
		{"0 */6 * * *", "", true},
		{"@daily", "America/New_York", true},
		{"0 2 * * MON-FRI", "Asia/Kolkata", true},
		{"@every 1h", "", false},
		{"TZ=UTC 0 * * * *", "", false},
		{"0 * * *", "", false},
		{"0 * * * * *", "", false},
		{"0 2 * * *", "Local", false},
		{"0 2 * * *", "Europe/Nowhere", false},
	} {
		if _, err := parse(api.EtcdBackupScheduleSpec{Schedule: tc.cron, TimeZone: tc.zone}); (err == nil) != tc.ok {
			t.Errorf("parse(%q in %q): %v, want ok %v", tc.cron, tc.zone, err, tc.ok)
		}
	}
}

// A pass that created a backup writes it to status, and the pass after it, which sees that
// backup and that status, writes nothing and creates nothing.
func TestStatusAndQuietPass(t *testing.T) {
	s := newSchedule("*/5 * * * *", 2)
	old := backupOf(s, at(9, 5), api.BackupSucceeded)
	fw, _, err := pass(t, s, at(9, 10), old)
	if err != nil || fw.status == nil || len(fw.created) != 1 {
		t.Fatalf("first pass: %v, status %v, created %v", err, fw.status, names(fw.created))
	}
	st := fw.status
	name := BackupName("s", at(9, 10))
	if !st.LastScheduleTime.Time.Equal(at(9, 10)) || !st.LastSuccessfulTime.Time.Equal(at(9, 6)) ||
		!st.NextScheduleTime.Time.Equal(at(9, 15)) || !slices.Equal(st.Active, []string{name}) || st.ObservedGeneration != 1 {
		t.Errorf("status %+v, want last 09:10, successful 09:06, next 09:15, active [%s]", st, name)
	}
	s.Status = *st
	fw, after, err := pass(t, s, at(9, 10).Add(time.Second), old, fw.created[0])
	if err != nil || fw.status != nil || len(fw.created) != 0 || len(fw.events) != 0 || after != 5*time.Minute-time.Second {
		t.Errorf("second pass: %v, status %v, created %v, events %q, after %s; want nothing and 4m59s",
			err, fw.status, names(fw.created), fw.events, after)
	}
}

// An invalid schedule already reported is not reported again.
func TestInvalidReportedOnce(t *testing.T) {
	s := newSchedule("61 * * * *", 2)
	fw, _, err := pass(t, s, at(9, 10))
	if err != nil || fw.status == nil || len(fw.events) != 1 {
		t.Fatalf("first pass: %v, status %v, events %q", err, fw.status, fw.events)
	}
	s.Status = *fw.status
	if fw, _, err = pass(t, s, at(9, 11)); err != nil || fw.status != nil || len(fw.events) != 0 {
		t.Errorf("second pass: %v, status %v, events %q; want neither", err, fw.status, fw.events)
	}
}

// A backup of that name that exists already is the scheduled time taken: no error.
func TestCreateBackupAlreadyExists(t *testing.T) {
	s := newSchedule("*/5 * * * *", 2)
	b := Backup(s, at(9, 5))
	w := &apiWriter{client: fake.NewSimpleClientset([]runtime.Object{b.DeepCopy()}...)}
	if err := w.CreateBackup(context.Background(), b); err != nil {
		t.Errorf("CreateBackup of a backup that exists: %v", err)
	}
	got, err := w.client.EtcdV1alpha1().EtcdBackups("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(got.Items) != 1 {
		t.Errorf("backups %v, %v; want the one", got, err)
	}
}

// A schedule gone, or being deleted, stops its loop: it holds no finalizer.
func TestGone(t *testing.T) {
	s := newSchedule("*/5 * * * *", 2)
	s.DeletionTimestamp = &metav1.Time{Time: at(9, 1)}
	if _, _, err := pass(t, s, at(9, 5)); !errors.Is(err, controller.ErrGone) {
		t.Errorf("Sync of a schedule being deleted: %v, want ErrGone", err)
	}
	s.DeletionTimestamp, s.Name = nil, "other"
	r := &Reconciler{w: &fakeWriter{}, deps: Deps{Schedules: listers.NewEtcdBackupScheduleLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		Now: func() time.Time { return at(9, 5) }}}
	if _, err := r.Sync(context.Background(), "ns", "s"); !errors.Is(err, controller.ErrGone) {
		t.Errorf("Sync of a schedule not in the cache: %v, want ErrGone", err)
	}
}
