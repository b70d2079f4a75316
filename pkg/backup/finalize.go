package backup

import (
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// whileDeleting is how often a pass looks at a backup whose snapshot is being deleted.
const whileDeleting = 10 * time.Second

// whileSecretMissing is how often a pass looks again at a backup whose S3 snapshot cannot be
// deleted for want of its Secrets.
const whileSecretMissing = 5 * time.Minute

// bucketOf names b's bucket, for Events.
func bucketOf(b *api.EtcdBackup) string {
	if s3 := b.Spec.Destination.S3; s3 != nil {
		return s3.Bucket
	}
	return ""
}

// finalize deletes the snapshot of a backup being deleted whose deletionPolicy is Delete: its
// attempts' pods first (none may still write), then a pod deletes the snapshot (and an
// attempt's temporary file), then the finalizer goes. Without the finalizer there is nothing
// to do: ErrGone.
func (r *Reconciler) finalize(ctx context.Context, b *api.EtcdBackup, pods []*corev1.Pod) (time.Duration, error) {
	if !slices.Contains(b.Finalizers, api.BackupFinalizer) {
		return 0, controller.ErrGone
	}
	files := filesOf(b, pods)
	var attempts []*corev1.Pod
	var deleter *corev1.Pod
	for _, p := range pods {
		if p.Name == DeletePodName(b.Name) {
			deleter = p
		} else {
			attempts = append(attempts, p)
		}
	}
	if len(attempts) > 0 {
		// Read the snapshot an attempt reported (filesOf) before its pod goes: the next
		// pass sees no pod, and finds it in status only if the outcome was written.
		if b.Status.Location == "" && len(files) > 1 {
			st := *b.Status.DeepCopy()
			st.Location = files[0]
			return whileDeleting, r.w.WriteStatus(ctx, b, st)
		}
		return whileDeleting, r.deleteAll(ctx, attempts)
	}
	where := "bucket " + bucketOf(b)
	if s3 := b.Spec.Destination.S3; s3 != nil {
		if problem := member.S3SecretsProblem(s3, b.Namespace, r.secretGetter(ctx, b.Namespace)); problem != "" && deleter == nil {
			// No pod could reach the store. Said once a pass, slowly: the user restores the
			// Secret, or removes the finalizer to keep the object.
			r.w.Event(b, corev1.EventTypeWarning, EventDeleteFailed, fmt.Sprintf("cannot delete %v from %s: %s", files, where, problem))
			return whileSecretMissing, nil
		}
	} else {
		claim := b.Spec.Destination.Volume.ClaimName
		where = "claim " + claim
		if _, err := r.deps.KubeClient.CoreV1().PersistentVolumeClaims(b.Namespace).Get(ctx, claim, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			// The snapshot went with its claim.
			return 0, r.w.SetFinalizer(ctx, b, false)
		}
	}
	switch {
	case deleter == nil:
		return whileDeleting, r.w.CreatePod(ctx, DeletePod(b, r.deps.Image, files))
	case deleter.Status.Phase == corev1.PodSucceeded:
		r.w.Event(b, corev1.EventTypeNormal, EventDeleted, fmt.Sprintf("deleted %v from %s", files, where))
		return 0, r.w.SetFinalizer(ctx, b, false)
	case deleter.Status.Phase == corev1.PodFailed && deleter.DeletionTimestamp == nil:
		rep, _ := report(deleter)
		r.w.Event(b, corev1.EventTypeWarning, EventDeleteFailed, fmt.Sprintf("deleting the snapshot failed, trying again: %s", rep.Message))
		if err := r.w.DeletePod(ctx, deleter); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("deleting the snapshot of backup %s failed: %s", b.Name, rep.Message)
	}
	return whileDeleting, nil
}

// filesOf are the files of b on its claim, relative to its root: the snapshot status or a
// succeeded attempt reports, then the temporary file an attempt may have left. In S3, they
// are the object's key and that of its SHA-256, which an attempt may have written whatever
// status says.
func filesOf(b *api.EtcdBackup, pods []*corev1.Pod) []string {
	if b.Spec.Destination.S3 != nil {
		key := snapshot.ObjectKey(ObjectPrefix(b), SnapshotName(b))
		return []string{key, snapshot.SumKey(key)}
	}
	var files []string
	if b.Status.Location != "" {
		files = append(files, b.Status.Location)
	}
	for _, p := range pods {
		if rep, ok := report(p); ok && rep.Result != nil && !slices.Contains(files, rep.Result.Location) {
			files = append(files, rep.Result.Location)
		}
	}
	return append(files, path.Join(path.Clean("/" + b.Spec.Destination.Volume.Path)[1:], snapshot.PartFile(SnapshotName(b))))
}
