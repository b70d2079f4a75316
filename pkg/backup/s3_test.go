package backup

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// newS3Backup is backup b of example to the bucket backups under prefix etcd/, whose
// credentials are the Secret s3-credentials.
func newS3Backup(policy api.BackupDeletionPolicy) *api.EtcdBackup {
	b := newBackup(policy)
	b.Spec.Destination = api.BackupDestination{S3: &api.S3Destination{Endpoint: "http://s3.example.com:7070", Bucket: "backups",
		Prefix: "etcd/", ForcePathStyle: true, CredentialsSecret: api.SecretReference{Name: "s3-credentials"}}}
	return b
}

func s3Credentials(keys ...string) []*corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: "ns"}, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("x")
	}
	return []*corev1.Secret{s}
}

var bothKeys = []string{api.S3AccessKeyIDKey, api.S3SecretAccessKeyKey}

func failedWith(b *api.EtcdBackup, n int, reason snapshot.FailureReason, msg string) *corev1.Pod {
	return attempt(b, n, corev1.PodFailed, reportOf(snapshot.Report{Reason: reason, Message: msg}))
}

// A backup to S3 checks its Secrets before any pod; the store's refusals end it at once with
// the store's reason, one that does not answer is tried again.
func TestS3BackupPass(t *testing.T) {
	b := newS3Backup(api.BackupRetain)
	denied := failedWith(b, 1, snapshot.FailureAccessDenied, "asking for bucket backups: access denied: AccessDenied: Access Denied.")
	noBucket := failedWith(b, 1, snapshot.FailureBucketNotFound, "bucket not found: the store has no bucket backups")
	unreachable := failedWith(b, 1, snapshot.FailureUnreachable, "dial tcp: connection refused")
	for _, tc := range []passCase{
		{name: "no credentials Secret: fails at once", w: world{backup: b, cluster: newCluster()},
			phase: api.BackupFailed, reason: api.ReasonSecretNotFound},
		{name: "a key missing: fails at once", w: world{backup: b, cluster: newCluster(), secrets: s3Credentials(api.S3AccessKeyIDKey)},
			phase: api.BackupFailed, reason: api.ReasonSecretNotFound},
		{name: "the first attempt's pod is created", w: world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...)},
			phase: api.BackupPending, create: "b-attempt1"},
		{name: "credentials refused: not tried again", w: world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...),
			pods: []*corev1.Pod{denied}}, phase: api.BackupFailed, reason: api.ReasonStoreAccessDenied},
		{name: "no bucket: not tried again", w: world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...),
			pods: []*corev1.Pod{noBucket}}, phase: api.BackupFailed, reason: api.ReasonBucketNotFound},
		{name: "unreachable: tried again", w: world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...),
			pods: []*corev1.Pod{unreachable}}, phase: api.BackupPending, create: "b-attempt2"},
		{name: "unreachable three times: Failed", w: world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...),
			pods: []*corev1.Pod{failedWith(b, 1, snapshot.FailureUnreachable, "x"), failedWith(b, 2, snapshot.FailureUnreachable, "x"),
				failedWith(b, 3, snapshot.FailureUnreachable, "dial tcp: connection refused")}},
			phase: api.BackupFailed, reason: api.ReasonStoreUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw, _, err := pass(t, tc.w)
			if err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if tc.phase != "" && (fw.status == nil || fw.status.Phase != tc.phase) {
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
		})
	}
}

// The pod of a backup to S3 mounts the credentials' two keys read-only and no claim, and is
// told the bucket and the object's prefix: the destination's, then the namespace.
func TestS3AttemptPod(t *testing.T) {
	p := AttemptPod(newS3Backup(api.BackupRetain), newCluster(), 1, "op:dev")
	ctr := p.Spec.Containers[0]
	a, err := snapshot.Parse(ctr.Args)
	if err != nil {
		t.Fatalf("the backup command refuses the pod's arguments %q: %v", ctr.Args, err)
	}
	if a.Path != "etcd/ns" || a.Name != "example-b" || a.Root != "" || a.S3.Endpoint != "http://s3.example.com:7070" ||
		a.S3.Bucket != "backups" || !a.S3.PathStyle || a.S3.CredentialsDir != member.S3CredentialsDir {
		t.Errorf("arguments %+v", a)
	}
	if slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil }) {
		t.Errorf("a claim is mounted: %+v", p.Spec.Volumes)
	}
	i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == member.S3CredentialsVolume })
	if i < 0 || p.Spec.Volumes[i].Secret.SecretName != "s3-credentials" || len(p.Spec.Volumes[i].Secret.Items) != 2 {
		t.Fatalf("volumes %+v: want the credentials' two keys", p.Spec.Volumes)
	}
	if j := slices.IndexFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == member.S3CredentialsVolume }); j < 0 || !ctr.VolumeMounts[j].ReadOnly {
		t.Errorf("mounts %+v: want the credentials read-only", ctr.VolumeMounts)
	}
	for _, e := range ctr.Env {
		t.Errorf("environment %v: the credentials are files, nothing is in the environment", e)
	}
}

// Deleting a backup to S3 whose policy is Delete runs a pod that deletes its object and the
// object of its SHA-256; without the credentials Secret no pod is made and an Event says why.
func TestS3DeletePolicy(t *testing.T) {
	b := newS3Backup(api.BackupDelete)
	b.Status = api.EtcdBackupStatus{Phase: api.BackupSucceeded, Location: "etcd/ns/example-b.db"}
	b.DeletionTimestamp = &metav1.Time{Time: now}
	fw, _, err := pass(t, world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...)})
	if err != nil || len(fw.created) != 1 || fw.created[0].Name != "b-delete" {
		t.Fatalf("err %v, created %v; want the delete pod", err, fw.created)
	}
	a, err := snapshot.Parse(fw.created[0].Spec.Containers[0].Args)
	if err != nil || strings.Join(a.Delete, ",") != "etcd/ns/example-b.db,etcd/ns/example-b.db.sha256" || a.S3.Bucket != "backups" {
		t.Errorf("delete pod arguments %+v, %v", a, err)
	}
	done := DeletePod(b, "op:dev", nil)
	done.Status.Phase = corev1.PodSucceeded
	fw, _, err = pass(t, world{backup: b, cluster: newCluster(), secrets: s3Credentials(bothKeys...), pods: []*corev1.Pod{done}})
	if err != nil || fw.finalizer == nil || *fw.finalizer {
		t.Errorf("err %v, finalizer %v; want it removed once the object is deleted", err, fw.finalizer)
	}
	fw, _, err = pass(t, world{backup: b, cluster: newCluster()})
	if err != nil || len(fw.created) != 0 || fw.finalizer != nil || len(fw.events) != 1 || !strings.Contains(fw.events[0], "Secret s3-credentials does not exist") {
		t.Errorf("without the Secret: err %v, created %v, finalizer %v, events %v", err, fw.created, fw.finalizer, fw.events)
	}
}
