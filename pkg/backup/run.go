package backup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// outcome is what a pass concludes of a backup that is not final yet.
type outcome struct {
	phase   api.BackupPhase
	reason  api.ConditionReason
	message string
	result  *snapshot.Result
}

// run carries a backup forward: checks before the first attempt, then one attempt at a time,
// each read back from its pod.
func (r *Reconciler) run(ctx context.Context, b *api.EtcdBackup, pods []*corev1.Pod) (time.Duration, error) {
	attempts := attemptPods(b, pods)
	if len(attempts) == 0 {
		if o, failed := r.precheck(ctx, b); failed {
			return 0, r.finish(ctx, b, 0, o)
		}
		return 0, r.startAttempt(ctx, b, 1)
	}
	last := attempts[len(attempts)-1]
	n := attemptOf(b.Name, last.Name)
	switch last.Status.Phase {
	case corev1.PodSucceeded:
		if rep, ok := report(last); ok && rep.Result != nil {
			return 0, r.finish(ctx, b, n, outcome{phase: api.BackupSucceeded, reason: api.ReasonBackupCompleted, result: rep.Result,
				message: completedMessage(rep.Result)})
		}
		return r.attemptFailed(ctx, b, last, api.ReasonBackupAttemptsExhausted, "the backup's pod exited without reporting a snapshot")
	case corev1.PodFailed:
		rep, _ := report(last)
		reason, msg := failureOf(last, rep)
		return r.attemptFailed(ctx, b, last, reason, msg)
	case corev1.PodRunning:
		return whileRunning, r.progress(ctx, b, api.BackupRunning, n)
	}
	waited := r.deps.Now().Sub(last.CreationTimestamp.Time)
	if waited >= podStartTimeout {
		return 0, r.finish(ctx, b, n, outcome{phase: api.BackupFailed, reason: api.ReasonBackupPodCannotStart,
			message: fmt.Sprintf("pod %s did not start within %s: %s", last.Name, podStartTimeout, whyNotStarted(last))})
	}
	return podStartTimeout - waited, r.progress(ctx, b, api.BackupPending, n)
}

// precheck fails a backup whose cluster or claim does not exist, or whose S3 Secrets lack
// what the pod needs, before any pod is made.
func (r *Reconciler) precheck(ctx context.Context, b *api.EtcdBackup) (outcome, bool) {
	c, err := r.deps.Clusters.EtcdClusters(b.Namespace).Get(b.Spec.ClusterName)
	if apierrors.IsNotFound(err) {
		return outcome{phase: api.BackupFailed, reason: api.ReasonClusterNotFound,
			message: fmt.Sprintf("EtcdCluster %s does not exist in namespace %s", b.Spec.ClusterName, b.Namespace)}, true
	}
	if err == nil && len(endpoints(c)) == 0 {
		return outcome{phase: api.BackupFailed, reason: api.ReasonBackupNoQuorum,
			message: fmt.Sprintf("EtcdCluster %s lists no voting member in its status", c.Name)}, true
	}
	if s3 := b.Spec.Destination.S3; s3 != nil {
		if problem := member.S3SecretsProblem(s3, b.Namespace, r.secretGetter(ctx, b.Namespace)); problem != "" {
			return outcome{phase: api.BackupFailed, reason: api.ReasonSecretNotFound, message: problem}, true
		}
		return outcome{}, false
	}
	claim := b.Spec.Destination.Volume.ClaimName
	_, err = r.deps.KubeClient.CoreV1().PersistentVolumeClaims(b.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return outcome{phase: api.BackupFailed, reason: api.ReasonClaimNotFound,
			message: fmt.Sprintf("PersistentVolumeClaim %s does not exist in namespace %s", claim, b.Namespace)}, true
	}
	return outcome{}, false
}

// secretGetter reads the Secrets of namespace for member.S3SecretsProblem: nil and no error
// for one that does not exist. Only the presence of their keys is looked at.
func (r *Reconciler) secretGetter(ctx context.Context, namespace string) func(string) (*corev1.Secret, error) {
	return func(name string) (*corev1.Secret, error) {
		s, err := r.deps.KubeClient.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return s, err
	}
}

// startAttempt creates the pod of attempt n.
func (r *Reconciler) startAttempt(ctx context.Context, b *api.EtcdBackup, n int) error {
	c, err := r.deps.Clusters.EtcdClusters(b.Namespace).Get(b.Spec.ClusterName)
	if err != nil {
		return fmt.Errorf("getting cluster %s from the cache: %w", b.Spec.ClusterName, err)
	}
	if err := r.w.CreatePod(ctx, AttemptPod(b, c, n, r.deps.Image)); err != nil {
		return err
	}
	r.log(b).WithField("attempt", n).Info("Started a backup pod")
	if n == 1 {
		r.w.Event(b, corev1.EventTypeNormal, EventStarted, fmt.Sprintf("taking a snapshot of %s in pod %s", c.Name, AttemptPodName(b.Name, n)))
	}
	return r.progress(ctx, b, api.BackupPending, n)
}

// attemptFailed starts the next attempt once retryDelay has passed since the failed pod
// ended, or fails the backup when that pod's attempt was the last or its failure is one
// another attempt cannot mend (a full volume, credentials the store refuses, a bucket it does
// not have).
func (r *Reconciler) attemptFailed(ctx context.Context, b *api.EtcdBackup, failed *corev1.Pod, reason api.ConditionReason, msg string) (time.Duration, error) {
	n := attemptOf(b.Name, failed.Name)
	switch {
	case reason == api.ReasonBackupNoSpace || reason == api.ReasonStoreAccessDenied || reason == api.ReasonBucketNotFound:
		return 0, r.finish(ctx, b, n, outcome{phase: api.BackupFailed, reason: reason,
			message: fmt.Sprintf("attempt %d failed: %s", n, msg)})
	case n >= maxAttempts:
		return 0, r.finish(ctx, b, n, outcome{phase: api.BackupFailed, reason: reason,
			message: fmt.Sprintf("all %d attempts failed, the last: %s", maxAttempts, msg)})
	}
	if _, err := r.deps.Clusters.EtcdClusters(b.Namespace).Get(b.Spec.ClusterName); apierrors.IsNotFound(err) {
		// Deleted while the attempt ran: no later attempt can find it, and the backup must
		// not stay Running for ever.
		return 0, r.finish(ctx, b, n, outcome{phase: api.BackupFailed, reason: api.ReasonClusterNotFound,
			message: fmt.Sprintf("EtcdCluster %s was deleted; attempt %d failed: %s", b.Spec.ClusterName, n, msg)})
	}
	if wait := endedAt(failed).Add(retryDelay << (n - 1)).Sub(r.deps.Now()); wait > 0 {
		return wait, nil
	}
	r.w.Event(b, corev1.EventTypeWarning, EventAttemptFailed, fmt.Sprintf("attempt %d of %d failed (%s): %s", n, maxAttempts, reason, msg))
	return 0, r.startAttempt(ctx, b, n+1)
}

// failureOf is the reason and message of a failed attempt's pod.
func failureOf(p *corev1.Pod, rep snapshot.Report) (api.ConditionReason, string) {
	switch rep.Reason {
	case "":
		if p.Status.Reason != "" {
			return api.ReasonBackupAttemptsExhausted, fmt.Sprintf("pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
		}
		return api.ReasonBackupAttemptsExhausted, fmt.Sprintf("pod %s failed without a report", p.Name)
	case snapshot.FailureNoQuorum:
		return api.ReasonBackupNoQuorum, rep.Message
	case snapshot.FailureNoSpace:
		return api.ReasonBackupNoSpace, rep.Message
	case snapshot.FailureCorrupt:
		return api.ReasonSnapshotCorrupt, rep.Message
	case snapshot.FailureAccessDenied:
		return api.ReasonStoreAccessDenied, rep.Message
	case snapshot.FailureBucketNotFound:
		return api.ReasonBucketNotFound, rep.Message
	case snapshot.FailureUnreachable:
		return api.ReasonStoreUnreachable, rep.Message
	}
	return api.ReasonBackupAttemptsExhausted, rep.Message
}

// attemptPods are the attempt pods of b, in attempt order.
func attemptPods(b *api.EtcdBackup, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if attemptOf(b.Name, p.Name) > 0 {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return attemptOf(b.Name, out[i].Name) < attemptOf(b.Name, out[j].Name) })
	return out
}

// progress writes a phase that is not final, with the start time, when it changed.
func (r *Reconciler) progress(ctx context.Context, b *api.EtcdBackup, phase api.BackupPhase, attempts int) error {
	st := *b.Status.DeepCopy()
	st.Phase, st.Attempts = phase, int32(attempts)
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: r.deps.Now()}
	}
	if st.Phase == b.Status.Phase && st.Attempts == b.Status.Attempts && b.Status.StartTime != nil {
		return nil
	}
	return r.w.WriteStatus(ctx, b, st)
}

// finish writes a final outcome, with an Event. The pods go in a later pass, once the
// outcome is in status.
func (r *Reconciler) finish(ctx context.Context, b *api.EtcdBackup, attempts int, o outcome) error {
	st := *b.Status.DeepCopy()
	now := metav1.Time{Time: r.deps.Now()}
	st.Phase, st.Attempts, st.CompletionTime = o.phase, int32(attempts), &now
	if st.StartTime == nil {
		st.StartTime = &now
	}
	complete, failed := metav1.ConditionFalse, metav1.ConditionTrue
	if o.result != nil {
		res := o.result
		st.Revision, st.SizeBytes, st.SHA256, st.EtcdVersion, st.Member, st.Location =
			res.Revision, res.SizeBytes, res.SHA256, res.EtcdVersion, res.Member, res.Location
		complete, failed = metav1.ConditionTrue, metav1.ConditionFalse
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(api.BackupConditionComplete), Status: complete,
		Reason: string(o.reason), Message: o.message, ObservedGeneration: b.Generation})
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(api.BackupConditionFailed), Status: failed,
		Reason: string(o.reason), Message: o.message, ObservedGeneration: b.Generation})
	if err := r.w.WriteStatus(ctx, b, st); err != nil {
		return err
	}
	event, kind := EventSucceeded, corev1.EventTypeNormal
	if o.result == nil {
		event, kind = EventFailed, corev1.EventTypeWarning
	}
	r.w.Event(b, kind, event, fmt.Sprintf("%s: %s", o.reason, o.message))
	r.log(b).WithField("phase", o.phase).WithField("reason", o.reason).Info("Backup finished")
	return nil
}

// endedAt is when pod p's backup container ended, as the kubelet reports it; the pod's
// creation when it does not say.
func endedAt(p *corev1.Pod) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == containerName && t != nil && !t.FinishedAt.IsZero() {
			return t.FinishedAt.Time
		}
	}
	return p.CreationTimestamp.Time
}

// podTookWords introduce, in a Complete condition's message, how long the backup's pod took.
const podTookWords = "; its pod took "

// completedMessage is the Complete condition's message of a backup whose pod reported res:
// where the snapshot is and, when the pod said, how long the pod took, from its start of work
// to the snapshot stored and checked (PodTook reads it back).
func completedMessage(res *snapshot.Result) string {
	msg := fmt.Sprintf("snapshot of revision %d written and verified at %s", res.Revision, res.Location)
	if res.Seconds > 0 {
		took := time.Duration(res.Seconds * float64(time.Second)).Round(time.Millisecond)
		msg += podTookWords + took.String() + " from its start of work to the snapshot stored and checked"
	}
	return msg
}

// PodTook reads back, from the message of a backup's Complete condition (completedMessage),
// how long the backup's pod took, without its own start; false when the message does not say.
func PodTook(message string) (time.Duration, bool) {
	_, rest, ok := strings.Cut(message, podTookWords)
	if !ok {
		return 0, false
	}
	took, _, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(took)
	return d, err == nil && d > 0
}
