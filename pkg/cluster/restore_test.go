package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	etcdlisters "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// restoredCluster is a new cluster restored from the EtcdBackup b.
func restoredCluster() *api.EtcdCluster {
	c := newCluster(3)
	c.Spec.Bootstrap = &api.BootstrapSpec{FromBackup: &api.FromBackupSpec{BackupName: "b", BumpRevision: 1000, MarkCompacted: true}}
	return c
}

// withBackups gives the fixture a lister of the given EtcdBackups.
func withBackups(f *fixture, backups ...*api.EtcdBackup) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, b := range backups {
		_ = idx.Add(b)
	}
	f.with(func(d *Deps) { d.Backups = etcdlisters.NewEtcdBackupLister(idx) })
}

func backupAt(phase api.BackupPhase, location string) *api.EtcdBackup {
	return &api.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		Spec: api.EtcdBackupSpec{ClusterName: "old",
			Destination: api.BackupDestination{Volume: &api.VolumeDestination{ClaimName: "backups", Path: "old/"}}},
		Status: api.EtcdBackupStatus{Phase: phase, Location: location},
	}
}

// The seed of a cluster restored from a Succeeded EtcdBackup is built to restore from its
// file, on its claim mounted read-only.
func TestSeedRestoredFromBackup(t *testing.T) {
	c := restoredCluster()
	f := newFixture(t, c)
	withBackups(f, backupAt(api.BackupSucceeded, "old/old-b-42.db"))
	syncOnce(t, f)
	creates := f.actions("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("created %d pods, want the seed", len(creates))
	}
	seed := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	got, _ := member.ReadTemplate(c.Name, seed)
	want := member.Restore{ClaimName: "backups", Key: "old/old-b-42.db", BumpRevision: 1000, MarkCompacted: true}
	if got.Restore == nil || *got.Restore != want {
		t.Fatalf("seed's restore %+v, want %+v", got.Restore, want)
	}
	if !member.UpToDate(c, seed, member.Target{Version: c.Spec.Version}, testInitImage) {
		t.Error("the restored seed's pod is out of date as soon as it is made: it would be rolled")
	}
}

// A backup that does not exist, or has not succeeded: no seed, Degraded RestoreFailed.
func TestNoSeedWithoutTheSnapshot(t *testing.T) {
	for name, backups := range map[string][]*api.EtcdBackup{
		"no such backup": nil,
		"backup running": {backupAt(api.BackupRunning, "")},
		"backup failed":  {backupAt(api.BackupFailed, "")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, restoredCluster())
			withBackups(f, backups...)
			syncOnce(t, f)
			if n := len(f.actions("create", "pods")); n != 0 {
				t.Fatalf("created %d pods without the snapshot", n)
			}
			st, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(st.Status.Conditions, func(c metav1.Condition) bool { return c.Type == string(api.ConditionDegraded) })
			if i < 0 || st.Status.Conditions[i].Reason != string(api.ReasonRestoreFailed) ||
				!strings.Contains(st.Status.Conditions[i].Message, "EtcdBackup b") {
				t.Errorf("conditions %+v, want Degraded RestoreFailed naming the backup", st.Status.Conditions)
			}
		})
	}
}

// s3Backup is a Succeeded EtcdBackup b to an S3 bucket, whose credentials are the Secret
// s3-credentials.
func s3Backup() *api.EtcdBackup {
	b := backupAt(api.BackupSucceeded, "etcd/ns/old-b.db")
	b.Spec.Destination = api.BackupDestination{S3: &api.S3Destination{Endpoint: "http://s3.example.com", Bucket: "backups",
		ForcePathStyle: true, CredentialsSecret: api.SecretReference{Name: "s3-credentials"}}}
	b.Status.SHA256 = strings.Repeat("ab", 32)
	return b
}

func s3Credentials(keys ...string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: "ns"}, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("x")
	}
	return s
}

// The seed of a cluster restored from a backup in S3 downloads the backup's object and
// checks it against the SHA-256 the backup recorded; without the credentials Secret (or with
// one that lacks a key) no seed is made and the cluster says which.
func TestSeedRestoredFromS3(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secret  *corev1.Secret
		problem string
	}{
		{"credentials", s3Credentials(api.S3AccessKeyIDKey, api.S3SecretAccessKeyKey), ""},
		{"no Secret", nil, "Secret s3-credentials does not exist"},
		{"a key missing", s3Credentials(api.S3AccessKeyIDKey), "Secret s3-credentials has no key AWS_SECRET_ACCESS_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := restoredCluster()
			objs := []runtime.Object{c}
			if tc.secret != nil {
				objs = append(objs, tc.secret)
			}
			f := newFixture(t, objs...)
			withBackups(f, s3Backup())
			syncOnce(t, f)
			creates := f.actions("create", "pods")
			if tc.problem != "" {
				st, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(st.Status.Conditions, func(c metav1.Condition) bool { return c.Type == string(api.ConditionDegraded) })
				if len(creates) != 0 || i < 0 || st.Status.Conditions[i].Reason != string(api.ReasonRestoreFailed) ||
					!strings.Contains(st.Status.Conditions[i].Message, tc.problem) {
					t.Fatalf("%d pods created, conditions %+v; want none and Degraded RestoreFailed saying %q", len(creates), st.Status.Conditions, tc.problem)
				}
				return
			}
			if len(creates) != 1 {
				t.Fatalf("created %d pods, want the seed", len(creates))
			}
			seed := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			got, _ := member.ReadTemplate(c.Name, seed)
			want := member.Restore{Key: "etcd/ns/old-b.db", SHA256: strings.Repeat("ab", 32), BumpRevision: 1000, MarkCompacted: true,
				S3: member.S3Source{Endpoint: "http://s3.example.com", Bucket: "backups", PathStyle: true, CredentialsSecret: "s3-credentials"}}
			if got.Restore == nil || *got.Restore != want {
				t.Fatalf("seed's restore %+v, want %+v", got.Restore, want)
			}
			if !member.UpToDate(c, seed, member.Target{Version: c.Spec.Version}, testInitImage) {
				t.Error("the restored seed's pod is out of date as soon as it is made: it would be rolled")
			}
		})
	}
}
