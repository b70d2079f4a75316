package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
)

// writer is every write of a backup's pass, so that tests see each one (fakeWriter).
type writer interface {
	// CreatePod creates p; one that exists already is not an error.
	CreatePod(ctx context.Context, p *corev1.Pod) error
	// DeletePod deletes p, if it is still the pod of that UID; one already gone is not an
	// error.
	DeletePod(ctx context.Context, p *corev1.Pod) error
	// WriteStatus writes st as b's status, unless b was changed since it was read.
	WriteStatus(ctx context.Context, b *api.EtcdBackup, st api.EtcdBackupStatus) error
	// SetFinalizer adds or removes api.BackupFinalizer, unless b was changed since it was read.
	SetFinalizer(ctx context.Context, b *api.EtcdBackup, on bool) error
	// Event records an Event on b.
	Event(b *api.EtcdBackup, eventType string, reason EventReason, message string)
}

// apiWriter writes through the API server.
type apiWriter struct {
	kube     kubernetes.Interface
	client   versioned.Interface
	recorder record.EventRecorder
}

var _ writer = (*apiWriter)(nil)

func (w *apiWriter) CreatePod(ctx context.Context, p *corev1.Pod) error {
	_, err := w.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s: %w", p.Name, err)
	}
	return nil
}

func (w *apiWriter) DeletePod(ctx context.Context, p *corev1.Pod) error {
	err := w.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s: %w", p.Name, err)
	}
	return nil
}

func (w *apiWriter) WriteStatus(ctx context.Context, b *api.EtcdBackup, st api.EtcdBackupStatus) error {
	c := b.DeepCopy()
	c.Status = st
	if _, err := w.client.EtcdV1alpha1().EtcdBackups(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

func (w *apiWriter) SetFinalizer(ctx context.Context, b *api.EtcdBackup, on bool) error {
	finalizers := slices.DeleteFunc(slices.Clone(b.Finalizers), func(f string) bool { return f == api.BackupFinalizer })
	if on {
		finalizers = append(finalizers, api.BackupFinalizer)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": b.ResourceVersion, "uid": b.UID}})
	if err != nil {
		return fmt.Errorf("encoding finalizers: %w", err)
	}
	if _, err := w.client.EtcdV1alpha1().EtcdBackups(b.Namespace).Patch(ctx, b.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting finalizers: %w", err)
	}
	return nil
}

func (w *apiWriter) Event(b *api.EtcdBackup, eventType string, reason EventReason, message string) {
	if w.recorder != nil {
		w.recorder.Event(b, eventType, string(reason), message)
	}
}

// EventReason is the reason of an Event on an EtcdBackup.
type EventReason string

// The Events of a backup.
const (
	EventStarted   EventReason = "BackupStarted"
	EventSucceeded EventReason = "BackupSucceeded"
	EventFailed    EventReason = "BackupFailed"
	// EventAttemptFailed: an attempt failed and another is started.
	EventAttemptFailed EventReason = "AttemptFailed"
	EventDeleted       EventReason = "SnapshotDeleted"
	// EventDeleteFailed: the pod that deletes the snapshot failed; it is tried again.
	EventDeleteFailed EventReason = "SnapshotDeleteFailed"
)
