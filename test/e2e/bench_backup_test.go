//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// benchBackups measures backups of the large database (largeValues of largeValueSize) of a
// cluster of three on claims, to a volume and to the S3 store of make s3, next to their floor
// in the same run: `etcdctl snapshot save` of the same database, from a follower (the member
// a backup prefers), to a file on an emptyDir of a pod on the same node. A backup does more
// than the floor: it starts a pod, and it reads the snapshot back to check it before it is
// Succeeded; the target is within 1.5 times the floor. Then each backup is restored into a new
// three-member cluster, next to an empty cluster's apply -> Available(3) on claims (the median
// of the same run, applyMedian; 0 when the rounds did not measure it).
func benchBackups(t *testing.T, applyMedian float64) {
	f := framework.New(t)
	requireOperator(t, f)
	requireS3(t)
	const name = "large"
	size := fmt.Sprintf("%d MiB", largeValues*largeValueSize>>20)
	f.Apply(strings.Replace(exampleManifest(t), "name: example", "name: "+name, 1))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	f.Fill(name, largePrefix, largeValues, largeValueSize, 5*time.Minute)

	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	ordinal := -1
	for _, m := range c.Status.Members {
		if !m.Leader && !m.Learner {
			ordinal, _ = strconv.Atoi(strings.TrimPrefix(m.Name, name+"-"))
			break
		}
	}
	if ordinal < 0 {
		t.Fatalf("no follower in %+v", c.Status.Members)
	}
	f.StartEtcdctlPod("floor")
	start := time.Now()
	if out, err := f.EtcdctlIn("floor", "--endpoints=http://"+f.MemberHost(name, ordinal)+":2379", "snapshot", "save", "/work/floor.db"); err != nil {
		t.Fatalf("etcdctl snapshot save: %v: %s", err, out)
	}
	floor := time.Since(start).Seconds()
	figure(t, "floor: etcdctl snapshot save ("+size+") to a local file", floor, "s")
	figure(t, "floor: etcdctl snapshot save, throughput", float64(largeValues*largeValueSize>>20)/floor, "MiB/s")

	for _, b := range []struct{ dest, name, manifest string }{
		{"a volume", "large-vol", volumeBackupManifest(t, "large-vol", name)},
		{"S3", "large-s3", s3BackupManifest(t, "large-s3", name)},
	} {
		start := time.Now()
		f.Apply(b.manifest)
		var got etcdBackup
		waitFast(t, b.name+" finished", 10*time.Minute, func() (bool, error) {
			if err := f.GetJSON("etcdbackup/"+b.name, &got); err != nil {
				return false, err
			}
			return got.Status.Phase == "Succeeded" || got.Status.Phase == "Failed", fmt.Errorf("phase %q", got.Status.Phase)
		})
		d := time.Since(start).Seconds()
		if got.Status.Phase != "Succeeded" {
			t.Fatalf("backup %s: %+v", b.name, got.Status)
		}
		figure(t, "backup: to "+b.dest+" ("+size+") -> Succeeded", d, "s")
		figure(t, "backup: to "+b.dest+", throughput", float64(got.Status.SizeBytes>>20)/d, "MiB/s")
		figure(t, "backup: to "+b.dest+", over the floor", d/floor, "x")
	}

	for _, r := range []struct{ from, name, backup string }{
		{"a volume", "restored-vol", "large-vol"},
		{"S3", "restored-s3", "large-s3"},
	} {
		start := time.Now()
		f.Apply(restoreManifest(r.name, r.backup))
		if err := f.WatchEtcdCluster(r.name, 10*time.Minute, func(c *framework.EtcdCluster) (bool, error) { return c.InSpec(3) }); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start).Seconds()
		figure(t, "backup: restore from "+r.from+" ("+size+") -> Available(3), claims", d, "s")
		if applyMedian > 0 {
			figure(t, "backup: restore from "+r.from+", over an empty cluster's apply (median)", d-applyMedian, "s")
		}
		// The next restore has the node to itself.
		f.Delete("etcdcluster/" + r.name)
		f.Eventually(r.name+"'s pods gone", 3*time.Minute, func() (bool, error) {
			return len(podUIDs(f, r.name)) == 0, nil
		})
	}
	deleteS3Backup(f, "large-s3")
}
