// Package backup runs one EtcdBackup's pass: it takes the snapshot in a pod that runs the
// agent binary of the operator's image (`etcd-operator backup`, package snapshot) with the destination's
// claim, or its S3 credentials, mounted there alone, never through the operator's memory, reads the outcome the pod
// reports as its termination message, and writes it to status. A backup is taken once: it
// succeeds, or fails with a reason after at most maxAttempts pods. With deletionPolicy Delete,
// a finalizer holds the EtcdBackup until a pod has deleted its snapshot.
//
// Nothing of a pass is remembered by the operator: the attempts are the backup's pods, kept
// until the outcome is written to status, so a pass that follows a lost status write decides
// the same.
package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
	listers "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// Bounds of a backup.
const (
	// maxAttempts is how many pods a backup starts before it fails: a member that went away
	// mid-stream is worth another try, a fourth rarely.
	maxAttempts = 3
	// podStartTimeout bounds how long an attempt's pod may wait to run (a claim that cannot
	// bind, no node, an image that cannot be pulled) before the backup fails, quoting why.
	podStartTimeout = 5 * time.Minute
	// whileRunning is how often a pass looks at a backup whose pod runs, besides its events.
	whileRunning = 30 * time.Second
	// retryDelay is the wait after the first failed attempt before the next; it doubles
	// after each: a leader election or a member's restart is over by then.
	retryDelay = 10 * time.Second
)

// Deps are what a Reconciler needs.
type Deps struct {
	KubeClient kubernetes.Interface
	Client     versioned.Interface
	Backups    listers.EtcdBackupLister
	Clusters   listers.EtcdClusterLister
	// Pods must see the backups' pods (they carry the managed-by label).
	Pods     corelisters.PodLister
	Recorder record.EventRecorder
	// Image is the operator's own image, which the backups' pods run.
	Image string
	Log   *logrus.Entry
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Reconciler runs the passes of EtcdBackups.
type Reconciler struct {
	deps Deps
	w    writer
}

var _ controller.Syncer = (*Reconciler)(nil)

// NewReconciler returns a Reconciler that writes through the API server.
func NewReconciler(d Deps) *Reconciler {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Reconciler{deps: d, w: &apiWriter{kube: d.KubeClient, client: d.Client, recorder: d.Recorder}}
}

// Sync runs one pass of the backup namespace/name. It returns controller.ErrGone once the
// backup is gone, or is being deleted with nothing left to do.
func (r *Reconciler) Sync(ctx context.Context, namespace, name string) (time.Duration, error) {
	b, err := r.deps.Backups.EtcdBackups(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, controller.ErrGone
	}
	if err != nil {
		return 0, fmt.Errorf("getting backup from the cache: %w", err)
	}
	if b.Spec.Destination.Volume == nil && b.Spec.Destination.S3 == nil {
		return 0, nil // the CRD requires a destination; nothing this operator knows to do
	}
	pods, err := r.podsOf(b)
	if err != nil {
		return 0, err
	}
	if b.DeletionTimestamp != nil {
		return r.finalize(ctx, b, pods)
	}
	want := b.Spec.DeletionPolicy == api.BackupDelete
	if want != slices.Contains(b.Finalizers, api.BackupFinalizer) {
		// Before any file is written: a snapshot that must go with its EtcdBackup is never
		// written without the finalizer that deletes it.
		return 0, r.w.SetFinalizer(ctx, b, want)
	}
	switch b.Status.Phase {
	case api.BackupSucceeded, api.BackupFailed:
		return 0, r.deleteAll(ctx, pods)
	}
	return r.run(ctx, b, pods)
}

// podsOf are the pods of backup b (by label, then by controller reference).
func (r *Reconciler) podsOf(b *api.EtcdBackup) ([]*corev1.Pod, error) {
	all, err := r.deps.Pods.Pods(b.Namespace).List(labels.SelectorFromSet(labels.Set{LabelBackup: b.Name}))
	if err != nil {
		return nil, fmt.Errorf("listing pods from the cache: %w", err)
	}
	var pods []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == b.UID {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// deleteAll deletes pods that are not already going.
func (r *Reconciler) deleteAll(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			errs = append(errs, r.w.DeletePod(ctx, p))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) log(b *api.EtcdBackup) *logrus.Entry {
	return r.deps.Log.WithField("backup", b.Namespace+"/"+b.Name)
}
