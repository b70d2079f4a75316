package schedule

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// TestScheduleOverTime runs a schedule of every minute with keep 2 on a fake clock, each pass
// at the time the one before asked for, while each backup created succeeds before the next
// pass (what the e2e TestBackupSchedule shows on a cluster). The operator is down for 40
// minutes on the way. Each scheduled time is taken once and on time, the gap gets one
// catch-up backup, and the two newest Succeeded backups are kept, the others deleted.
func TestScheduleOverTime(t *testing.T) {
	s := newSchedule("* * * * *", 2)
	world := map[string]*api.EtcdBackup{}
	var taken []string
	now := at(9, 1)
	for step := range 8 {
		if step == 4 {
			now = now.Add(40*time.Minute + 30*time.Second) // the operator is down
		}
		fw, after, err := pass(t, s, now, slices.Collect(maps.Values(world))...)
		if err != nil {
			t.Fatalf("pass at %s: %v", now, err)
		}
		if len(fw.created) != 1 {
			t.Fatalf("pass at %s created %v, want one backup", now, names(fw.created))
		}
		for _, b := range fw.created {
			if _, exists := world[b.Name]; exists {
				t.Fatalf("pass at %s created %s again", now, b.Name)
			}
			b.UID = types.UID(b.Name)
			b.Status.Phase = api.BackupSucceeded // taken before the next pass
			b.Status.CompletionTime = &metav1.Time{Time: now.Add(10 * time.Second)}
			world[b.Name] = b
			taken = append(taken, b.Name)
		}
		for _, name := range fw.deleted {
			delete(world, name)
		}
		if fw.status != nil {
			s.Status = *fw.status
		}
		next := now.Add(after)
		if next.Second() != 0 || after <= 0 || after > time.Minute {
			t.Fatalf("pass at %s asks for the next at %s, want the next minute", now, next)
		}
		now = next
	}
	want := []string{BackupName("s", at(9, 1)), BackupName("s", at(9, 2)), BackupName("s", at(9, 3)), BackupName("s", at(9, 4)),
		BackupName("s", at(9, 45)), BackupName("s", at(9, 46)), BackupName("s", at(9, 47)), BackupName("s", at(9, 48))}
	if !slices.Equal(taken, want) {
		t.Errorf("backups taken %v, want %v (one catch-up at 09:45, 30 s late, none for the 40 minutes missed before)", taken, want)
	}
	// The last pass's deletions applied: the two newest Succeeded remain, and the one just created.
	kept := slices.Sorted(maps.Keys(world))
	if len(kept) != 3 || kept[0] != want[5] {
		t.Errorf("backups left %v, want %v", kept, want[5:])
	}
}
