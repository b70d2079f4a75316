//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// scheduledBackups is the part of a list of EtcdBackups the schedule tests read.
type scheduledBackups struct {
	Items []scheduledBackup `json:"items"`
}

// scheduledBackup is the part of an EtcdBackup the schedule tests read.
type scheduledBackup struct {
	Metadata struct {
		Name              string    `json:"name"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
		DeletionTimestamp *string   `json:"deletionTimestamp"`
		OwnerReferences   []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			Controller bool   `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		DeletionPolicy string `json:"deletionPolicy"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		Location   string `json:"location"`
		Revision   int64  `json:"revision"`
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
}

// TestBackupSchedule: the example schedule, every minute with keep 1, on the example cluster.
// It makes a backup per minute, each owned by it and named <schedule>-<minutes since 1970>,
// and once the second has succeeded the first is deleted, its file with it (deletionPolicy
// Delete, the default of a schedule's backups); suspended, it makes no more, and the claim
// holds the file of the backup kept and no other. It waits for two scheduled minutes, mostly
// idle: keep 1 tests the same retention as a larger keep, a minute sooner.
func TestBackupSchedule(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(exampleManifest(t))
	f.WaitClusterInSpec("example", 3, 3*time.Minute)
	f.Apply(strings.SplitN(exampleFile(t, "etcdbackup-volume.yaml"), "---", 2)[0])
	f.Apply(everyMinuteSchedule(t, 1))

	files := map[string]string{} // every Succeeded backup seen: its file
	var left scheduledState
	f.Eventually("two backups succeeded, the first deleted and one kept", 5*time.Minute, func() (bool, error) {
		left = listScheduled(f, "every-minute", files)
		seen := slices.Sorted(maps.Keys(files))
		return len(seen) >= 2 && !slices.Contains(left.succeeded, seen[0]) && len(left.succeeded) == 1,
			fmt.Errorf("succeeded so far %v, left %+v", seen, left)
	})
	f.Patch("etcdbackupschedule/every-minute", `{"spec":{"suspend":true}}`)
	f.Eventually("the schedule suspended, no backup running or being deleted, one kept", 3*time.Minute, func() (bool, error) {
		ready, err := f.NS("get", "etcdbackupschedule/every-minute", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
		if err != nil {
			return false, err
		}
		left = listScheduled(f, "every-minute", files)
		return ready == "Suspended" && left.others == 0 && left.deleting == 0 && len(left.succeeded) == 1,
			fmt.Errorf("Ready %q; left %+v", ready, left)
	})
	onClaim := claimFiles(f, "etcd-backups", "example")
	for name, file := range files {
		if want := slices.Contains(left.succeeded, name); slices.Contains(onClaim, file) != want {
			t.Errorf("backup %s (kept %v): its file %s on the claim is %v; the claim holds %v", name, want, file, !want, onClaim)
		}
	}
	t.Logf("backups taken %v, kept %v; files on the claim %v", slices.Sorted(maps.Keys(files)), left.succeeded, onClaim)
}

// everyMinuteSchedule is example/etcdbackupschedule.yaml (backups of the example cluster onto
// the claim of example/etcdbackup-volume.yaml) named every-minute, at every minute, keeping
// keep backups.
func everyMinuteSchedule(t *testing.T, keep int) string {
	t.Helper()
	return replaceEach(t, exampleFile(t, "etcdbackupschedule.yaml"), `schedule: "0 */6 * * *"`, `schedule: "* * * * *"`,
		"keep: 7", fmt.Sprintf("keep: %d", keep), "name: example-every-6h", "name: every-minute")
}

// scheduledState is what listScheduled found.
type scheduledState struct {
	// succeeded are the Succeeded backups not being deleted, by name.
	succeeded []string
	// others counts the backups neither Succeeded nor being deleted; deleting those being
	// deleted.
	others, deleting int
}

// listScheduled lists the backups of schedule, checks that the schedule owns each, that
// their names are <schedule>-<minutes since 1970> of a minute that has come and that none
// failed, and adds the file of each Succeeded one to files.
func listScheduled(f *framework.Framework, schedule string, files map[string]string) scheduledState {
	t := f.T()
	var list scheduledBackups
	var st scheduledState
	if err := f.GetJSON("etcdbackups", &list); err != nil {
		t.Logf("listing backups: %v", err)
		return st
	}
	for _, b := range list.Items {
		m := b.Metadata
		minutes, err := strconv.ParseInt(strings.TrimPrefix(m.Name, schedule+"-"), 10, 64)
		if err != nil || !strings.HasPrefix(m.Name, schedule+"-") || minutes*60 > time.Now().Unix() {
			t.Fatalf("backup %s: not named <schedule>-<minutes since 1970> of a minute past", m.Name)
		}
		if len(m.OwnerReferences) != 1 || !m.OwnerReferences[0].Controller || m.OwnerReferences[0].Kind != "EtcdBackupSchedule" ||
			m.OwnerReferences[0].Name != schedule || b.Spec.DeletionPolicy != "Delete" {
			t.Fatalf("backup %s: owners %+v, deletionPolicy %q; want the schedule %s, Delete", m.Name, m.OwnerReferences, b.Spec.DeletionPolicy, schedule)
		}
		switch {
		case b.Status.Phase == "Failed":
			t.Fatalf("backup %s failed", m.Name)
		case b.Status.Phase == "Succeeded":
			files[m.Name] = b.Status.Location
		}
		switch {
		case m.DeletionTimestamp != nil:
			st.deleting++
		case b.Status.Phase == "Succeeded":
			st.succeeded = append(st.succeeded, m.Name)
		default:
			st.others++
		}
	}
	slices.Sort(st.succeeded)
	return st
}

// claimFiles lists the folder dir of claim, as paths relative to its root, from a pod that
// mounts it (as the backups' user).
func claimFiles(f *framework.Framework, claim, dir string) []string {
	f.T().Helper()
	out := f.RunOnClaim("list-claim", claim, true, "ls -1 /data/"+dir)
	var files []string
	for _, name := range strings.Fields(out) {
		files = append(files, dir+"/"+name)
	}
	return files
}
