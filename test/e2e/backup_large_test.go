//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The database of TestLargeBackupAndRestore and of the bench's backup figures: 512 values of
// 1 MiB, the 512 MiB. A value of 1 MiB stays under etcd's default request limit
// (1.5 MiB), so the database fills with few puts; the default 4Gi claim gives a backend quota
// of 1856 MiB (member.QuotaBackendBytes), room for it three times over.
const (
	largeValues    = 512
	largeValueSize = 1 << 20
	largePrefix    = "big/"
)

// operatorGrowthBound is how much the operator's resident memory may grow while it backs up
// and restores the large database. It is a bound on correctness, not on speed: the data must
// go from etcd to the destination, and from the destination to the seed, in pods of their
// own, and never through the operator. A snapshot through the operator would grow it by the
// database's 512 MiB, and even one 16 MiB part of an S3 upload held by it would pass the
// bound. What the operator itself takes on meanwhile, two more clusters to manage and the
// backups' pods in its caches, is about 1 MiB a cluster (docs/bench.md: 41.3 MiB with one
// cluster, 43.7 MiB with three more).
const operatorGrowthBound = 8 << 20

// replaceEach replaces each old string of pairs (old, new, old, new, ...) once in s, and fails
// the test when one is not there: a manifest of example/ that changed must not be used
// unchanged.
func replaceEach(t *testing.T, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("no %q to replace in %q", pairs[i], s)
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// volumeBackupManifest is example/etcdbackup-volume.yaml for the backup name of cluster, with
// a claim of its own, large enough for the large database.
func volumeBackupManifest(t *testing.T, name, cluster string) string {
	t.Helper()
	return replaceEach(t, exampleFile(t, "etcdbackup-volume.yaml"),
		"name: etcd-backups", "name: "+name+"-claim", "storage: 1Gi", "storage: 2Gi", "name: example-backup", "name: "+name,
		"clusterName: example", "clusterName: "+cluster, "claimName: etcd-backups", "claimName: "+name+"-claim",
		"path: example/", "path: "+cluster+"/")
}

// s3BackupManifest is example/etcdbackup-s3.yaml (its credentials Secret, then the backup) for
// the backup name of cluster, its object deleted with it: the store of make s3 outlives the
// test's namespace.
func s3BackupManifest(t *testing.T, name, cluster string) string {
	t.Helper()
	return replaceEach(t, exampleFile(t, "etcdbackup-s3.yaml"), "name: example-backup-s3", "name: "+name,
		"clusterName: example", "clusterName: "+cluster, "deletionPolicy: Retain", "deletionPolicy: Delete")
}

// restoreManifest is a three-member cluster restored from the EtcdBackup backup, with neither
// bumpRevision nor markCompacted: its keyspace is the snapshot's, revision for revision, so
// etcd's hash of it at the snapshot's revision is the source's.
func restoreManifest(name, backup string) string {
	return cluster(name, fmt.Sprintf("  size: 3\n  version: %s\n  bootstrap:\n    fromBackup:\n      backupName: %s\n", framework.Version37, backup))
}

// deleteS3Backup deletes an EtcdBackup to S3 whose deletionPolicy is Delete and waits until it
// is gone, and its object with it.
func deleteS3Backup(f *framework.Framework, name string) {
	f.T().Helper()
	f.Delete("etcdbackup/" + name)
	f.Eventually(name+" deleted with its object", 3*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "etcdbackup", name, "--ignore-not-found", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", err
	})
}

// TestLargeBackupAndRestore: a cluster of three filled with 512 MiB (largeValues of
// largeValueSize) under the writer; a backup to a volume and one to the S3 store of make s3,
// side by side; the source cluster deleted; each restored into a new three-member cluster,
// which has etcd's hash of the source's keyspace at the backup's revision, every key, a sample
// of values byte for byte, and every put the writer had acknowledged. Meanwhile the operator's
// resident memory grows by less than operatorGrowthBound. Not parallel: it then runs alone,
// so that what the operator's memory does is this test's doing, and its 512 MiB do not slow
// the clusters of other tests. About 4 minutes on the 2-core node (the fill and the two
// restores, each of which copies the database to three members, take most of it).
func TestLargeBackupAndRestore(t *testing.T) {
	f := framework.New(t)
	requireOperator(t, f)
	requireS3(t)
	const name = "large"
	f.Apply(strings.Replace(exampleManifest(t), "name: example", "name: "+name, 1))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)

	mem := f.WatchOperatorMemory(time.Second)
	defer func() {
		if mem != nil {
			mem.Stop()
		}
	}()
	w := f.StartWriter(name)
	start := time.Now()
	f.Fill(name, largePrefix, largeValues, largeValueSize, 5*time.Minute)
	t.Logf("%d MiB put in %v", largeValues*largeValueSize>>20, time.Since(start).Round(100*time.Millisecond))
	acked := w.Stop()
	// The readings so far are the baseline: the operator managing the filled cluster.
	f.Eventually("three readings of the operator's memory", time.Minute, func() (bool, error) {
		return len(mem.Readings()) >= 3, nil
	})
	baseline := len(mem.Readings())

	f.Apply(volumeBackupManifest(t, "large-vol", name))
	f.Apply(s3BackupManifest(t, "large-s3", name))
	backups := map[string]etcdBackup{}
	for _, b := range []string{"large-vol", "large-s3"} {
		backups[b] = waitBackup(f, b, 10*time.Minute)
		st := backups[b].Status
		if st.Phase != "Succeeded" || st.SizeBytes < largeValues*largeValueSize || st.Revision == 0 {
			t.Fatalf("backup %s: %+v; want Succeeded, at least %d bytes", b, st, largeValues*largeValueSize)
		}
		t.Logf("backup %s: revision %d, %d MiB from %s, at %s", b, st.Revision, st.SizeBytes>>20, st.Member, st.Location)
	}
	// etcd's hash of the source's keyspace at each backup's revision, before the source goes.
	hashes := map[string]uint32{}
	for b, st := range backups {
		h, compacted, err := f.HashKV(name+"-0", st.Status.Revision)
		if err != nil {
			t.Fatalf("hash of %s at revision %d: %v", name, st.Status.Revision, err)
		}
		hashes[b] = h
		t.Logf("%s at revision %d: hash %d (compacted at %d)", name, st.Status.Revision, h, compacted)
	}
	f.Delete("etcdcluster/" + name)
	f.MustNS("delete", "pvc", "-l", "etcd.operator.dev/cluster="+name, "--wait=false")

	restored := map[string]string{"restored-vol": "large-vol", "restored-s3": "large-s3"}
	for r, b := range restored {
		f.Apply(restoreManifest(r, b))
	}
	for r := range restored {
		f.WaitClusterInSpec(r, 3, 8*time.Minute)
	}
	readings, failed, lastErr := mem.Stop()
	mem = nil
	checkOperatorGrowth(t, readings, baseline, failed, lastErr)

	sample := []int{0, 1, largeValues / 2, largeValues - 1, rand.IntN(largeValues), rand.IntN(largeValues)}
	for r, b := range restored {
		rev := backups[b].Status.Revision
		for _, member := range []string{r + "-0", r + "-2"} {
			h, _, err := f.HashKV(member, rev)
			if err != nil {
				t.Fatalf("hash of %s at revision %d: %v", member, rev, err)
			}
			if h != hashes[b] {
				t.Errorf("%s: hash %d of the keyspace at revision %d, the source's was %d", member, h, rev, hashes[b])
			}
		}
		f.CheckFilled(r, r+"-0", largePrefix, largeValues, largeValueSize, sample)
		w.VerifyIn(r, acked, r+"-0")
	}
	deleteS3Backup(f, "large-s3")
}

// checkOperatorGrowth fails the test when the operator's memory, read from one process
// throughout, grew by operatorGrowthBound or more from the highest of the first baseline
// readings to the highest of the others.
func checkOperatorGrowth(t *testing.T, readings []framework.OperatorMemory, baseline, failed int, lastErr error) {
	t.Helper()
	if baseline < 1 || len(readings) <= baseline || failed > len(readings) {
		t.Fatalf("%d readings of the operator's memory (%d before the backups), %d failed (the last: %v): too few to tell",
			len(readings), baseline, failed, lastErr)
	}
	first := readings[0]
	var before, peak float64
	for i, m := range readings {
		if m.UID != first.UID || m.Restarts != first.Restarts {
			t.Fatalf("the operator restarted while it backed up and restored: pod %s with %d restarts, then %s with %d",
				first.Pod, first.Restarts, m.Pod, m.Restarts)
		}
		if i < baseline {
			before = max(before, m.RSS)
		} else {
			peak = max(peak, m.RSS)
		}
	}
	t.Logf("operator resident memory: %.1f MiB before the backups, at most %.1f MiB through them and the restores (%d readings, %d failed)",
		before/(1<<20), peak/(1<<20), len(readings), failed)
	if peak-before >= operatorGrowthBound {
		t.Errorf("the operator's resident memory grew by %.1f MiB, from %.1f to %.1f MiB: more than %d MiB",
			(peak-before)/(1<<20), before/(1<<20), peak/(1<<20), operatorGrowthBound>>20)
	}
}
