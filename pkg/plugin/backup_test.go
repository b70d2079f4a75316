package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// fakeOperator plays the operator's part for the object the command creates: it waits for it
// (a watch on the fake clientset), then applies each status in turn, each once the command's
// output shows the line the step waits for (after[i]; none when empty), so that every
// progress line is seen.
type fakeOperator[T any] struct {
	t      *testing.T
	e      *testEnv
	watch  func(context.Context) (watch.Interface, error)
	update func(context.Context, T) error
}

func (o fakeOperator[T]) play(steps []func(T), after []string) <-chan struct{} {
	done := make(chan struct{})
	w, err := o.watch(context.Background())
	if err != nil {
		o.t.Fatal(err)
	}
	go func() {
		defer close(done)
		defer w.Stop()
		var obj T
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				obj = ev.Object.(T)
				break
			}
		}
		for i, step := range steps {
			if i < len(after) && after[i] != "" {
				o.e.out.waitFor(o.t, after[i])
			}
			step(obj)
			if err := o.update(context.Background(), obj); err != nil {
				o.t.Errorf("updating status: %v", err)
				return
			}
		}
	}()
	return done
}

func backupOperator(t *testing.T, e *testEnv) fakeOperator[*api.EtcdBackup] {
	backups := e.etcd.EtcdV1alpha1().EtcdBackups(testNamespace)
	return fakeOperator[*api.EtcdBackup]{t: t, e: e,
		watch: func(ctx context.Context) (watch.Interface, error) { return backups.Watch(ctx, metav1.ListOptions{}) },
		update: func(ctx context.Context, b *api.EtcdBackup) error {
			_, err := backups.UpdateStatus(ctx, b, metav1.UpdateOptions{})
			return err
		}}
}

// backup creates the EtcdBackup the flags describe and follows it: a line for each phase, the
// last with where the snapshot is.
func TestBackupFollowedToSucceeded(t *testing.T) {
	e := newTestEnv(testClusterObj(3))
	done := backupOperator(t, e).play([]func(*api.EtcdBackup){
		func(b *api.EtcdBackup) { b.Status.Phase, b.Status.Attempts = api.BackupRunning, 1 },
		func(b *api.EtcdBackup) {
			b.Status.Phase, b.Status.Revision, b.Status.SizeBytes, b.Status.Member = api.BackupSucceeded, 42, 3<<20, "example-1"
			b.Status.Location = "example/example-example-20261125-120000-42.db"
		},
	}, []string{": Pending", ": Running, attempt 1"})
	if err := e.run("backup", testCluster, "--to", "etcd-backups:example/", "--deletion-policy", "Delete"); err != nil {
		t.Fatalf("backup: %v", err)
	}
	<-done
	b, err := e.etcd.EtcdV1alpha1().EtcdBackups(testNamespace).Get(context.Background(), "example-20261125-120000", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the EtcdBackup named for the cluster and the time: %v", err)
	}
	if v := b.Spec.Destination.Volume; b.Spec.ClusterName != testCluster || v == nil || v.ClaimName != "etcd-backups" || v.Path != "example/" || b.Spec.DeletionPolicy != api.BackupDelete {
		t.Errorf("spec %+v", b.Spec)
	}
	want := []string{
		"etcdbackup/example-20261125-120000 created: a snapshot of example to claim etcd-backups, folder example/",
		"etcdbackup/example-20261125-120000: Pending (0s)",
		"etcdbackup/example-20261125-120000: Running, attempt 1 (0s)",
		"etcdbackup/example-20261125-120000: Succeeded: revision 42, 3.0MiB, from example-1, at example/example-example-20261125-120000-42.db (0s)",
	}
	if got := strings.TrimSpace(e.out.String()); got != strings.Join(want, "\n") {
		t.Errorf("output:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// A backup that fails is an error with its reason and message.
func TestBackupFailed(t *testing.T) {
	e := newTestEnv(testClusterObj(3))
	done := backupOperator(t, e).play([]func(*api.EtcdBackup){
		func(b *api.EtcdBackup) {
			b.Status.Phase = api.BackupFailed
			b.Status.Conditions = []metav1.Condition{{Type: string(api.BackupConditionFailed), Status: metav1.ConditionTrue,
				Reason: string(api.ReasonClaimNotFound), Message: `claim "etcd-backups" not found`}}
		},
	}, nil)
	err := e.run("backup", testCluster, "--to", "etcd-backups", "--name", "mine")
	<-done
	if err == nil || err.Error() != `etcdbackup/mine failed: ClaimNotFound: claim "etcd-backups" not found` {
		t.Errorf("backup: %v", err)
	}
}

// A backup of a cluster that does not exist, or to a destination that cannot be, creates nothing.
func TestBackupRefused(t *testing.T) {
	e := newTestEnv(testClusterObj(3))
	for _, args := range [][]string{{"backup", "nope", "--to", "etcd-backups"}, {"backup", testCluster, "--to", "s3://bucket"}} {
		if err := e.run(args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if list, _ := e.etcd.EtcdV1alpha1().EtcdBackups(testNamespace).List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("backups created: %v", list.Items)
	}
}

// Waiting ends at --timeout, with what to run to follow it further.
func TestBackupTimeout(t *testing.T) {
	e := newTestEnv(testClusterObj(3))
	start := time.Now()
	err := e.run("backup", testCluster, "--to", "etcd-backups", "--name", "slow", "--timeout", "200ms")
	if err == nil || !strings.Contains(err.Error(), "etcdbackup/slow: timed out after 200ms; it goes on: kubectl get etcdbackup slow -w") {
		t.Errorf("backup past its timeout: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the timeout of 200ms ended the wait after %s", time.Since(start))
	}
}

func clusterOperator(t *testing.T, e *testEnv) fakeOperator[*api.EtcdCluster] {
	clusters := e.etcd.EtcdV1alpha1().EtcdClusters(testNamespace)
	return fakeOperator[*api.EtcdCluster]{t: t, e: e,
		watch: func(ctx context.Context) (watch.Interface, error) { return clusters.Watch(ctx, metav1.ListOptions{}) },
		update: func(ctx context.Context, c *api.EtcdCluster) error {
			_, err := clusters.UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}}
}

func succeededBackup() *api.EtcdBackup {
	return &api.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: testNamespace},
		Spec:       api.EtcdBackupSpec{ClusterName: testCluster},
		Status:     api.EtcdBackupStatus{Phase: api.BackupSucceeded, Revision: 42, EtcdVersion: "3.6.16"},
	}
}

func condition(t api.ConditionType, status metav1.ConditionStatus, reason api.ConditionReason) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: status, Reason: string(reason), Message: "the message"}
}

// restore creates a cluster of the flags' size, at the backup's etcd version, restored from the
// backup, and follows it until it is Available.
func TestRestoreFollowedToAvailable(t *testing.T) {
	e := newTestEnv(succeededBackup())
	done := clusterOperator(t, e).play([]func(*api.EtcdCluster){
		func(c *api.EtcdCluster) {
			c.Status.Phase = api.PhaseBootstrapping
			c.Status.Conditions = []metav1.Condition{condition(api.ConditionProgressing, metav1.ConditionTrue, api.ReasonBootstrapping)}
		},
		func(c *api.EtcdCluster) {
			c.Status.Phase, c.Status.ReadyMembers = api.PhaseRunning, 1
			c.Status.Conditions = []metav1.Condition{condition(api.ConditionAvailable, metav1.ConditionTrue, api.ReasonClusterHealthy)}
		},
	}, []string{"restored: -, 0/1 ready", "Bootstrapping, 0/1 ready, Bootstrapping"})
	if err := e.run("restore", "restored", "--from-backup", "nightly", "--size", "1", "--bump-revision", "1000"); err != nil {
		t.Fatalf("restore: %v", err)
	}
	<-done
	c, err := e.etcd.EtcdV1alpha1().EtcdClusters(testNamespace).Get(context.Background(), "restored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fb := c.Spec.Bootstrap.FromBackup
	if c.Spec.Size != 1 || c.Spec.Version != "3.6.16" || fb.BackupName != "nightly" || fb.BumpRevision != 1000 || !fb.MarkCompacted {
		t.Errorf("spec %+v, fromBackup %+v", c.Spec, fb)
	}
	want := "etcdcluster/restored created: 1 members of etcd 3.6.16, its seed restored from etcdbackup/nightly (revision 42 of example)\n" +
		"etcdcluster/restored: -, 0/1 ready (0s)\n" +
		"etcdcluster/restored: Bootstrapping, 0/1 ready, Bootstrapping (0s)\n" +
		"etcdcluster/restored: Running, 1/1 ready, Available (0s)\n"
	if e.out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", e.out.String(), want)
	}
}

// A restore the operator refuses (RestoreFailed) is an error with its message; one from a
// backup that has not succeeded, or into a name taken, creates nothing.
func TestRestoreFailed(t *testing.T) {
	e := newTestEnv(succeededBackup())
	done := clusterOperator(t, e).play([]func(*api.EtcdCluster){
		func(c *api.EtcdCluster) {
			c.Status.Conditions = []metav1.Condition{condition(api.ConditionDegraded, metav1.ConditionTrue, api.ReasonRestoreFailed)}
		},
	}, nil)
	err := e.run("restore", "restored", "--from-backup", "nightly", "--timeout", "30s")
	<-done
	if err == nil || err.Error() != "etcdcluster/restored: RestoreFailed: the message" {
		t.Errorf("restore refused by the operator: %v", err)
	}

	running := succeededBackup()
	running.Name, running.Status.Phase = "running", api.BackupRunning
	e = newTestEnv(running, testClusterObj(3), succeededBackup())
	if err := e.run("restore", "restored", "--from-backup", "running"); err == nil || !strings.Contains(err.Error(), "etcdbackup running is Running") {
		t.Errorf("restore from a backup still running: %v", err)
	}
	if err := e.run("restore", testCluster, "--from-backup", "nightly"); err == nil || !strings.Contains(err.Error(), `etcdcluster "example" exists already`) {
		t.Errorf("restore into an existing cluster: %v", err)
	}
	if err := e.run("restore", "restored", "--from-backup", "gone"); err == nil || !strings.Contains(err.Error(), `etcdbackup "gone" not found`) {
		t.Errorf("restore from no backup: %v", err)
	}
	if list, _ := e.etcd.EtcdV1alpha1().EtcdClusters(testNamespace).List(context.Background(), metav1.ListOptions{}); len(list.Items) != 1 {
		t.Errorf("clusters: %d, want the one there before", len(list.Items))
	}
}
