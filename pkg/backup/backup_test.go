package backup

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	listers "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// fakeWriter records every write of a pass.
type fakeWriter struct {
	created   []*corev1.Pod
	deleted   []string
	status    *api.EtcdBackupStatus
	finalizer *bool
	events    []string
}

func (f *fakeWriter) CreatePod(_ context.Context, p *corev1.Pod) error {
	f.created = append(f.created, p)
	return nil
}
func (f *fakeWriter) DeletePod(_ context.Context, p *corev1.Pod) error {
	f.deleted = append(f.deleted, p.Name)
	return nil
}
func (f *fakeWriter) WriteStatus(_ context.Context, _ *api.EtcdBackup, st api.EtcdBackupStatus) error {
	f.status = &st
	return nil
}
func (f *fakeWriter) SetFinalizer(_ context.Context, _ *api.EtcdBackup, on bool) error {
	f.finalizer = &on
	return nil
}
func (f *fakeWriter) Event(_ *api.EtcdBackup, _ string, reason EventReason, msg string) {
	f.events = append(f.events, string(reason)+": "+msg)
}

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newBackup(policy api.BackupDeletionPolicy) *api.EtcdBackup {
	b := &api.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: types.UID("b-uid")},
		Spec: api.EtcdBackupSpec{ClusterName: "example", DeletionPolicy: policy,
			Destination: api.BackupDestination{Volume: &api.VolumeDestination{ClaimName: "backups", Path: "example/"}}},
	}
	if policy == api.BackupDelete {
		b.Finalizers = []string{api.BackupFinalizer}
	}
	return b
}

func newCluster() *api.EtcdCluster {
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "ns"},
		Status: api.EtcdClusterStatus{Members: []api.MemberStatus{
			{Name: "example-0", Ready: true}, {Name: "example-1", Ready: true}, {Name: "example-2", Learner: true}}},
	}
}

// attempt is the pod of attempt n of b in the given phase, terminated with msg when it ended.
func attempt(b *api.EtcdBackup, n int, phase corev1.PodPhase, msg string) *corev1.Pod {
	p := AttemptPod(b, newCluster(), n, "op:dev")
	p.UID = types.UID(p.Name)
	p.CreationTimestamp = metav1.Time{Time: now.Add(-time.Minute)}
	p.Status.Phase = phase
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}
	}
	return p
}

func reportOf(r snapshot.Report) string {
	b, _ := json.Marshal(r)
	return string(b)
}

type world struct {
	backup  *api.EtcdBackup
	cluster *api.EtcdCluster
	pods    []*corev1.Pod
	claim   bool
	// secrets are in the backup's namespace.
	secrets []*corev1.Secret
}

// pass runs one pass over the world and returns what it wrote.
func pass(t *testing.T, w world) (*fakeWriter, time.Duration, error) {
	t.Helper()
	backups := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	clusters := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = backups.Add(w.backup)
	if w.cluster != nil {
		_ = clusters.Add(w.cluster)
	}
	for _, p := range w.pods {
		_ = pods.Add(p)
	}
	var objs []runtime.Object
	if w.claim {
		objs = append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backups", Namespace: "ns"}})
	}
	for _, sec := range w.secrets {
		objs = append(objs, sec)
	}
	kube := kubefake.NewClientset(objs...)
	log := logrus.New()
	log.SetOutput(io.Discard)
	fw := &fakeWriter{}
	r := &Reconciler{w: fw, deps: Deps{
		KubeClient: kube, Backups: listers.NewEtcdBackupLister(backups), Clusters: listers.NewEtcdClusterLister(clusters),
		Pods: corelisters.NewPodLister(pods), Image: "op:dev", Log: logrus.NewEntry(log), Now: func() time.Time { return now },
	}}
	after, err := r.Sync(context.Background(), "ns", "b")
	return fw, after, err
}

func condition(st *api.EtcdBackupStatus, typ api.ConditionType) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == string(typ) {
			return &st.Conditions[i]
		}
	}
	return nil
}

// passCase is one row of TestBackupPass: a world, and what one pass over it writes.
type passCase struct {
	name      string
	w         world
	phase     api.BackupPhase
	reason    api.ConditionReason
	create    string
	finalizer *bool
}

// passCases are the rows of TestBackupPass.
func passCases() []passCase {
	retain, del := newBackup(api.BackupRetain), newBackup(api.BackupDelete)
	ok := reportOf(snapshot.Report{Result: &snapshot.Result{Revision: 42, SizeBytes: 20512, SHA256: "ab", Member: "example-1",
		Location: "example/example-b-42.db", EtcdVersion: "3.7.3"}})
	noQuorum := reportOf(snapshot.Report{Reason: snapshot.FailureNoQuorum, Message: "no member follows a leader"})
	full := reportOf(snapshot.Report{Reason: snapshot.FailureNoSpace, Message: "write: no space left on device"})
	noFinalizer := newBackup(api.BackupDelete)
	noFinalizer.Finalizers = nil
	stuck := attempt(retain, 1, corev1.PodPending, "")
	stuck.CreationTimestamp = metav1.Time{Time: now.Add(-podStartTimeout)}
	stuck.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Message: "pod has unbound immediate PersistentVolumeClaims"}}
	return []passCase{
		{name: "a cluster that does not exist fails at once", w: world{backup: retain, claim: true},
			phase: api.BackupFailed, reason: api.ReasonClusterNotFound},
		{name: "a claim that does not exist fails at once", w: world{backup: retain, cluster: newCluster()},
			phase: api.BackupFailed, reason: api.ReasonClaimNotFound},
		{name: "the first attempt's pod is created", w: world{backup: retain, cluster: newCluster(), claim: true},
			phase: api.BackupPending, create: "b-attempt1"},
		{name: "Delete: the finalizer comes before any pod", w: world{backup: noFinalizer, cluster: newCluster(), claim: true},
			finalizer: new(true)},
		{name: "a succeeded pod's report is the status", w: world{backup: del, cluster: newCluster(), claim: true,
			pods: []*corev1.Pod{attempt(del, 1, corev1.PodSucceeded, ok)}}, phase: api.BackupSucceeded, reason: api.ReasonBackupCompleted},
		{name: "a failed attempt is followed by the next", w: world{backup: retain, cluster: newCluster(), claim: true,
			pods: []*corev1.Pod{attempt(retain, 1, corev1.PodFailed, noQuorum)}}, phase: api.BackupPending, create: "b-attempt2"},
		{name: "a failed attempt whose cluster was deleted meanwhile fails the backup", w: world{backup: retain, claim: true,
			pods: []*corev1.Pod{attempt(retain, 1, corev1.PodFailed, noQuorum)}}, phase: api.BackupFailed, reason: api.ReasonClusterNotFound},
		{name: "the last attempt failed: Failed with its reason", w: world{backup: retain, cluster: newCluster(), claim: true,
			pods: []*corev1.Pod{attempt(retain, 1, corev1.PodFailed, noQuorum), attempt(retain, 2, corev1.PodFailed, noQuorum),
				attempt(retain, 3, corev1.PodFailed, noQuorum)}}, phase: api.BackupFailed, reason: api.ReasonBackupNoQuorum},
		{name: "a full volume is not tried again", w: world{backup: retain, cluster: newCluster(), claim: true,
			pods: []*corev1.Pod{attempt(retain, 1, corev1.PodFailed, full)}}, phase: api.BackupFailed, reason: api.ReasonBackupNoSpace},
		{name: "a pod that does not start within the bound fails the backup", w: world{backup: retain, cluster: newCluster(), claim: true,
			pods: []*corev1.Pod{stuck}}, phase: api.BackupFailed, reason: api.ReasonBackupPodCannotStart},
	}
}

func TestBackupPass(t *testing.T) {
	for _, tc := range passCases() {
		t.Run(tc.name, func(t *testing.T) {
			fw, _, err := pass(t, tc.w)
			if err != nil {
				t.Fatalf("Sync: %v", err)
			}
			switch {
			case tc.phase == "" && fw.status != nil:
				t.Errorf("status written: %+v", fw.status)
			case tc.phase != "" && (fw.status == nil || fw.status.Phase != tc.phase):
				t.Fatalf("status %+v, want phase %s", fw.status, tc.phase)
			}
			if tc.reason != "" {
				c := condition(fw.status, api.BackupConditionFailed)
				if c == nil || c.Reason != string(tc.reason) || c.Message == "" || len(fw.events) == 0 {
					t.Errorf("Failed condition %+v, events %v; want reason %s with a message and an Event", c, fw.events, tc.reason)
				}
			}
			var created []string
			for _, p := range fw.created {
				created = append(created, p.Name)
			}
			if got := strings.Join(created, ","); got != tc.create {
				t.Errorf("created pods %q, want %q", got, tc.create)
			}
			if (fw.finalizer == nil) != (tc.finalizer == nil) || (fw.finalizer != nil && *fw.finalizer != *tc.finalizer) {
				t.Errorf("finalizer set %v, want %v", fw.finalizer, tc.finalizer)
			}
		})
	}
}

// A succeeded backup's status carries what its pod reported; its pods go in the next pass.
func TestSucceededBackupReportsAndCleansUp(t *testing.T) {
	b := newBackup(api.BackupRetain)
	rep := snapshot.Report{Result: &snapshot.Result{Revision: 42, SizeBytes: 20512, SHA256: "ab", Member: "example-1",
		Location: "example/example-b-42.db", EtcdVersion: "3.7.3"}}
	pod := attempt(b, 1, corev1.PodSucceeded, reportOf(rep))
	fw, _, err := pass(t, world{backup: b, cluster: newCluster(), claim: true, pods: []*corev1.Pod{pod}})
	if err != nil {
		t.Fatal(err)
	}
	st := fw.status
	if st.Revision != 42 || st.SizeBytes != 20512 || st.Location != rep.Result.Location || st.Member != "example-1" ||
		st.EtcdVersion != "3.7.3" || st.CompletionTime == nil || len(fw.deleted) != 0 {
		t.Errorf("status %+v, deleted %v", st, fw.deleted)
	}
	b.Status = *st
	fw, _, err = pass(t, world{backup: b, cluster: newCluster(), claim: true, pods: []*corev1.Pod{pod}})
	if err != nil || fw.status != nil || strings.Join(fw.deleted, ",") != "b-attempt1" {
		t.Errorf("the pass after: err %v, status %+v, deleted %v; want the pod deleted alone", err, fw.status, fw.deleted)
	}
}

// The Complete condition says how long the pod took, when its report does (a pod of an older
// operator's does not), and PodTook reads it back from the condition's message.
func TestCompletedSaysHowLongThePodTook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds float64
		want    time.Duration
	}{
		{"reported", 2.3456, 2346 * time.Millisecond},
		{"not reported", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackup(api.BackupRetain)
			rep := snapshot.Report{Result: &snapshot.Result{Revision: 42, SizeBytes: 20512, SHA256: "ab", Member: "example-1",
				Location: "example/example-b-42.db", Seconds: tc.seconds}}
			fw, _, err := pass(t, world{backup: b, cluster: newCluster(), claim: true,
				pods: []*corev1.Pod{attempt(b, 1, corev1.PodSucceeded, reportOf(rep))}})
			if err != nil || fw.status == nil {
				t.Fatalf("pass: %v, status %v", err, fw.status)
			}
			c := meta.FindStatusCondition(fw.status.Conditions, string(api.BackupConditionComplete))
			if c == nil || !strings.HasPrefix(c.Message, "snapshot of revision 42 written and verified at example/example-b-42.db") {
				t.Fatalf("Complete condition %+v", c)
			}
			if got, ok := PodTook(c.Message); got != tc.want || ok != (tc.want > 0) {
				t.Errorf("PodTook(%q) = %s, %v; want %s", c.Message, got, ok, tc.want)
			}
		})
	}
}

// Deleting a backup whose policy is Delete runs a pod that deletes its file, then drops the
// finalizer; with Retain nothing is deleted.
func TestDeletePolicy(t *testing.T) {
	b := newBackup(api.BackupDelete)
	b.Status = api.EtcdBackupStatus{Phase: api.BackupSucceeded, Location: "example/example-b-42.db"}
	b.DeletionTimestamp = &metav1.Time{Time: now}
	fw, _, err := pass(t, world{backup: b, cluster: newCluster(), claim: true})
	if err != nil || len(fw.created) != 1 || fw.created[0].Name != "b-delete" {
		t.Fatalf("err %v, created %v; want the delete pod", err, fw.created)
	}
	if args := strings.Join(fw.created[0].Spec.Containers[0].Args, " "); !strings.Contains(args, "--delete=example/example-b-42.db,example/.example-b.part") {
		t.Errorf("delete pod args %q", args)
	}
	done := DeletePod(b, "op:dev", nil)
	done.Status.Phase = corev1.PodSucceeded
	fw, _, err = pass(t, world{backup: b, cluster: newCluster(), claim: true, pods: []*corev1.Pod{done}})
	if err != nil || fw.finalizer == nil || *fw.finalizer {
		t.Errorf("err %v, finalizer %v; want it removed once the file is deleted", err, fw.finalizer)
	}

	kept := newBackup(api.BackupRetain)
	kept.DeletionTimestamp = &metav1.Time{Time: now}
	kept.Finalizers = []string{"someone-else"}
	fw, _, err = pass(t, world{backup: kept, cluster: newCluster(), claim: true})
	if err == nil || len(fw.created) != 0 {
		t.Errorf("Retain: err %v, created %v; want ErrGone and no pod", err, fw.created)
	}
}

// The next attempt waits for retryDelay after the failed one ended, then starts.
func TestNextAttemptWaits(t *testing.T) {
	b := newBackup(api.BackupRetain)
	failed := attempt(b, 1, corev1.PodFailed, reportOf(snapshot.Report{Reason: snapshot.FailureNoQuorum, Message: "no leader"}))
	failed.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.Time{Time: now.Add(-time.Second)}
	fw, after, err := pass(t, world{backup: b, cluster: newCluster(), claim: true, pods: []*corev1.Pod{failed}})
	if err != nil || len(fw.created) != 0 || after != retryDelay-time.Second {
		t.Errorf("right after the failure: err %v, created %d pods, again after %s; want none, after %s", err, len(fw.created), after, retryDelay-time.Second)
	}
	failed.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.Time{Time: now.Add(-retryDelay)}
	fw, _, err = pass(t, world{backup: b, cluster: newCluster(), claim: true, pods: []*corev1.Pod{failed}})
	if err != nil || len(fw.created) != 1 || fw.created[0].Name != AttemptPodName("b", 2) {
		t.Errorf("after the delay: err %v, created %v; want attempt 2", err, fw.created)
	}
}

// A backup deleted while an attempt runs: the attempt goes first, so that nothing writes
// while its files are deleted.
func TestDeleteStopsTheAttemptFirst(t *testing.T) {
	b := newBackup(api.BackupDelete)
	b.DeletionTimestamp = &metav1.Time{Time: now}
	running := attempt(b, 1, corev1.PodRunning, "")
	fw, _, err := pass(t, world{backup: b, cluster: newCluster(), claim: true, pods: []*corev1.Pod{running}})
	if err != nil || strings.Join(fw.deleted, ",") != running.Name || len(fw.created) != 0 || fw.finalizer != nil {
		t.Errorf("err %v, deleted %v, created %d, finalizer %v; want the attempt deleted alone", err, fw.deleted, len(fw.created), fw.finalizer)
	}
}
