//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// s3Store is the outcome of starting the store of `make s3` once for the suite.
var s3Store struct {
	once sync.Once
	err  error
	out  string
}

// s3StoreTimeout bounds hack/s3.sh: building versitygw the first time takes a minute or two.
const s3StoreTimeout = 15 * time.Minute

// requireS3 makes sure the S3-compatible store of `make s3` runs, with its bucket, by running
// hack/s3.sh as make s3 does (once per suite; quick when the store is up already).
func requireS3(t *testing.T) {
	t.Helper()
	s3Store.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s3StoreTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, filepath.Join("..", "..", "hack", "s3.sh")).CombinedOutput()
		s3Store.out, s3Store.err = string(out), err
	})
	if s3Store.err != nil {
		t.Fatalf("starting the S3 store (hack/s3.sh, make s3): %v\n%s", s3Store.err, s3Store.out)
	}
}

// failedReason is the reason of a backup's Failed condition when it is True.
func failedReason(b etcdBackup) (reason, message string) {
	for _, c := range b.Status.Conditions {
		if c.Type == "Failed" && c.Status == "True" {
			return c.Reason, c.Message
		}
	}
	return "", ""
}

// TestBackupToS3AndRestore: keys written; a backup to the S3 store of make s3 with
// example/etcdbackup-s3.yaml; on the same cluster, a backup with credentials the store refuses,
// which fails at once with the store's reason and leaves the cluster as it was; more keys; the
// cluster and its claims deleted; the backup restored into a new three-member cluster
// (example/etcdcluster-restore-s3.yaml), which has every key written before the backup and
// none written after; then the backup, its policy turned to Delete, deleted with its object;
// then a cluster with client TLS backed up to S3 and restored (backupTLSToS3).
func TestBackupToS3AndRestore(t *testing.T) {
	t.Parallel()
	f, w := runningExample(t)
	requireS3(t)
	w.WaitAcked(50, 2*time.Minute)
	acked := w.Stop()
	w.Verify(acked, "example-0")
	before := putKeys(t, f, "example", "before", 5)

	f.Apply(exampleFile(t, "etcdbackup-s3.yaml"))
	b := waitBackup(f, "example-backup-s3", 5*time.Minute)
	if want := "etcd/" + f.Namespace + "/example-example-backup-s3.db"; b.Status.Phase != "Succeeded" || b.Status.Location != want ||
		b.Status.Revision == 0 || b.Status.SizeBytes == 0 || len(b.Status.SHA256) != 64 || b.Status.Member == "" {
		t.Fatalf("backup status %+v, want Succeeded at %s", b.Status, want)
	}
	t.Logf("snapshot of revision %d, %d bytes, from %s at %s", b.Status.Revision, b.Status.SizeBytes, b.Status.Member, b.Status.Location)

	// Credentials the store refuses: Failed with the store's reason, at the first attempt,
	// with an Event; the secret is in neither; the cluster's pods are the same.
	pods := podUIDs(f, "example")
	wrong := strings.NewReplacer("name: etcd-backup-s3", "name: wrong-s3", "name: example-backup-s3", "name: wrong-credentials",
		"etcd-backup-secret-key", "not-the-secret-key").Replace(exampleFile(t, "etcdbackup-s3.yaml"))
	f.Apply(wrong)
	bad := waitBackup(f, "wrong-credentials", 3*time.Minute)
	reason, msg := failedReason(bad)
	if bad.Status.Phase != "Failed" || reason != "StoreAccessDenied" || strings.Contains(msg, "not-the-secret-key") {
		t.Fatalf("backup with wrong credentials: %+v; want Failed, reason StoreAccessDenied, the store's words and not the secret", bad.Status)
	}
	t.Logf("wrong credentials: %s: %s", reason, msg)
	f.Eventually("the BackupFailed Event", time.Minute, func() (bool, error) {
		out, err := f.NS("get", "events", "--field-selector", "involvedObject.name=wrong-credentials,reason=BackupFailed", "-o", "jsonpath={.items[*].message}")
		return err == nil && strings.Contains(out, "StoreAccessDenied") && !strings.Contains(out, "not-the-secret-key"), err
	})
	if now := podUIDs(f, "example"); fmt.Sprint(now) != fmt.Sprint(pods) {
		t.Errorf("the cluster's pods changed during the failed backup: %v, then %v", pods, now)
	}

	after := putKeys(t, f, "example", "after", 5)
	restoreExample(t, f, "etcdcluster-restore-s3.yaml", "restored-s3", before, after, w, acked)

	// deletionPolicy Delete: the object goes with the EtcdBackup.
	f.Patch("etcdbackup/example-backup-s3", `{"spec":{"deletionPolicy":"Delete"}}`)
	f.Delete("etcdbackup/example-backup-s3")
	f.Eventually("example-backup-s3 deleted with its object", 3*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "etcdbackup", "example-backup-s3", "--ignore-not-found", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", err
	})
	out := f.MustNS("get", "events", "--field-selector", "involvedObject.name=example-backup-s3,reason=SnapshotDeleted", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(out, b.Status.Location) {
		t.Errorf("SnapshotDeleted Events %q, want the deletion of %s", out, b.Status.Location)
	}
	backupTLSToS3(t, f)
}

// backupTLSToS3: a cluster of one with TLS on both ports, keys written with the applications'
// client certificate; a backup to S3 (the backup's pod reaches the member with the operator's
// client certificate); the backup restored into a new three-member cluster with TLS on both
// ports and certificates of its own, which serves the keys to its own client certificate.
// About 45 seconds.
func backupTLSToS3(t *testing.T, f *framework.Framework) {
	t.Helper()
	const tlsSpec = "  tls: {peer: {}, client: {}}\n"
	f.Apply(cluster("tls-src", "  size: 1\n"+tlsSpec))
	f.WaitClusterInSpec("tls-src", 1, 3*time.Minute)
	keys := putKeys(t, f, "tls-src", "tls", 5)
	f.Apply(s3BackupManifest(t, "tls-s3", "tls-src"))
	b := waitBackup(f, "tls-s3", 5*time.Minute)
	if b.Status.Phase != "Succeeded" {
		t.Fatalf("backup of a cluster with client TLS to S3: %+v", b.Status)
	}
	f.Delete("etcdcluster/tls-src")
	f.Apply(cluster("tls-restored", "  size: 3\n"+tlsSpec+"  bootstrap:\n    fromBackup:\n      backupName: tls-s3\n"))
	f.WaitClusterInSpec("tls-restored", 3, 5*time.Minute)
	c, err := f.GetEtcdCluster("tls-restored")
	if err != nil {
		t.Fatal(err)
	}
	if !c.ClientTLS() || c.Status.TLS == nil || c.Status.TLS.ClientSecretName != framework.ClientSecretName("tls-restored") {
		t.Fatalf("tls-restored: spec.tls %+v, status.tls %+v; want client TLS with the Secret %s", c.Spec.TLS, c.Status.TLS,
			framework.ClientSecretName("tls-restored"))
	}
	// Read over TLS with tls-restored's own client certificate (ClientEtcdctl): a client port
	// in plaintext, or with another CA, refuses it.
	checkKeys(t, f, "tls-restored", keys)
	deleteS3Backup(f, "tls-s3")
}

// TestRestoreFromMissingS3Object: a cluster restored from a key the bucket does not have does
// not start: the seed's download step refuses, the cluster is Degraded quoting the store, and
// no empty cluster answers in its place.
func TestRestoreFromMissingS3Object(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	requireS3(t)
	f.Apply(strings.SplitN(exampleFile(t, "etcdbackup-s3.yaml"), "---", 2)[0])
	f.Apply(cluster("broken-s3", "  size: 3\n  bootstrap:\n    fromBackup:\n      destination:\n        s3:\n"+
		"          endpoint: http://versitygw.etcd-s3.svc.cluster.local:7070\n          bucket: etcd-backups\n"+
		"          forcePathStyle: true\n          credentialsSecret: {name: etcd-backup-s3}\n      key: nowhere/missing.db\n"))
	f.Eventually("broken-s3 Degraded, quoting the refused download", 5*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster("broken-s3")
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return c.Condition("Degraded") == "True" && strings.Contains(msg, "restore-failed") && strings.Contains(msg, "NoSuchKey"),
			fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	c, err := f.GetEtcdCluster("broken-s3")
	if err != nil {
		t.Fatal(err)
	}
	if c.Condition("Available") == "True" || c.Status.Size != 0 {
		t.Fatalf("a cluster came up without its snapshot: size %d, Available %s", c.Status.Size, c.Condition("Available"))
	}
}
