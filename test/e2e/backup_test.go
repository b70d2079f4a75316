//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// etcdBackup is the part of an EtcdBackup these tests read.
type etcdBackup struct {
	Status struct {
		Phase      string `json:"phase"`
		Revision   int64  `json:"revision"`
		SizeBytes  int64  `json:"sizeBytes"`
		SHA256     string `json:"sha256"`
		Location   string `json:"location"`
		Member     string `json:"member"`
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
}

// exampleFile is a file of example/.
func exampleFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "example", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitBackup waits until the EtcdBackup name is Succeeded or Failed and returns it.
func waitBackup(f *framework.Framework, name string, timeout time.Duration) etcdBackup {
	f.T().Helper()
	var b etcdBackup
	f.Eventually("EtcdBackup "+name+" finished", timeout, func() (bool, error) {
		if err := f.GetJSON("etcdbackup/"+name, &b); err != nil {
			return false, err
		}
		return b.Status.Phase == "Succeeded" || b.Status.Phase == "Failed", fmt.Errorf("phase %q", b.Status.Phase)
	})
	return b
}

// TestBackupAndRestore: keys written, a backup to a volume, more keys; the cluster and its
// claims deleted; the backup restored into a new three-member cluster, which has every key
// written before the backup and none written after, at revisions moved up by bumpRevision.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	f, w := runningExample(t)
	w.WaitAcked(50, 2*time.Minute)
	acked := w.Stop()
	w.Verify(acked, "example-0")
	before := putKeys(t, f, "example", "before", 5)

	f.Apply(exampleFile(t, "etcdbackup-volume.yaml"))
	b := waitBackup(f, "example-backup", 5*time.Minute)
	if b.Status.Phase != "Succeeded" || b.Status.Revision == 0 || b.Status.SizeBytes == 0 || len(b.Status.SHA256) != 64 ||
		!strings.HasPrefix(b.Status.Location, "example/example-example-backup-") || b.Status.Member == "" {
		t.Fatalf("backup status %+v", b.Status)
	}
	t.Logf("snapshot of revision %d, %d bytes, from %s at %s", b.Status.Revision, b.Status.SizeBytes, b.Status.Member, b.Status.Location)
	after := putKeys(t, f, "example", "after", 5)

	revision := restoreExample(t, f, "etcdcluster-restore.yaml", "restored", before, after, w, acked)
	if revision < b.Status.Revision+1000000000 {
		t.Errorf("restored cluster at revision %d, want at least the snapshot's %d moved up by 1000000000",
			revision, b.Status.Revision)
	}
}

// restoreExample deletes the cluster example and its claims, restores cluster from the example
// manifest file, and checks that it holds the keys of before and every put acknowledged in
// acked, and none of after (written after the backup). It returns the revision the restored
// cluster answered at.
func restoreExample(t *testing.T, f *framework.Framework, manifest, cluster string, before, after map[string]string,
	w *framework.Writer, acked framework.WriteLog) int64 {
	t.Helper()
	f.Delete("etcdcluster/example")
	f.Eventually("the example's pods gone", 3*time.Minute, func() (bool, error) {
		return len(podUIDs(f, "example")) == 0, nil
	})
	f.MustNS("delete", "pvc", "-l", "etcd.operator.dev/cluster=example", "--wait=true", "--timeout=2m")

	f.Apply(exampleFile(t, manifest))
	f.WaitClusterInSpec(cluster, 3, 5*time.Minute)
	checkKeys(t, f, cluster, before)
	w.VerifyIn(cluster, acked, cluster+"-0")
	var revision int64
	for k := range after {
		out, err := f.ClientEtcdctl(cluster, cluster+"-0", "get", k, "-w", "json")
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		var resp struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
			Count int64 `json:"count"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("get %s: %v in %q", k, err, out)
		}
		if resp.Count != 0 {
			t.Errorf("key %s, written after the backup, is in the restored cluster", k)
		}
		revision = resp.Header.Revision
	}
	return revision
}

// TestBackupOfMissingCluster: a backup of a cluster that does not exist fails at once, with
// the reason in status and an Event, and no pod is made.
func TestBackupOfMissingCluster(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(strings.Replace(exampleFile(t, "etcdbackup-volume.yaml"), "clusterName: example", "clusterName: nowhere", 1))
	b := waitBackup(f, "example-backup", time.Minute)
	var reason string
	for _, c := range b.Status.Conditions {
		if c.Type == "Failed" && c.Status == "True" {
			reason = c.Reason
		}
	}
	if b.Status.Phase != "Failed" || reason != "ClusterNotFound" {
		t.Fatalf("backup %+v, want Failed with reason ClusterNotFound", b.Status)
	}
	f.Eventually("the BackupFailed Event", time.Minute, func() (bool, error) {
		out, err := f.NS("get", "events", "--field-selector", "involvedObject.name=example-backup,reason=BackupFailed", "-o", "name")
		return err == nil && strings.TrimSpace(out) != "", err
	})
	if out := f.MustNS("get", "pods", "-l", "etcd.operator.dev/backup=example-backup", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("pods made for a backup of no cluster: %s", out)
	}
}

// TestRestoreFromMissingSnapshot: a cluster restored from a snapshot that is not on the claim
// does not start: the seed refuses (member-init's restore-failed), the cluster says why in
// Degraded, and no empty cluster answers in its place.
func TestRestoreFromMissingSnapshot(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(strings.SplitN(exampleFile(t, "etcdbackup-volume.yaml"), "---", 2)[0])
	f.Apply(cluster("broken", "  size: 3\n  bootstrap:\n    fromBackup:\n      destination: {volume: {claimName: etcd-backups}}\n      key: nowhere/missing.db\n"))
	f.Eventually("broken Degraded, quoting the refused restore", 5*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster("broken")
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return c.Condition("Degraded") == "True" && strings.Contains(msg, "restore"), fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	c, err := f.GetEtcdCluster("broken")
	if err != nil {
		t.Fatal(err)
	}
	if c.Condition("Available") == "True" || c.Status.Size != 0 {
		t.Fatalf("a cluster came up without its snapshot: size %d, Available %s", c.Status.Size, c.Condition("Available"))
	}
}
