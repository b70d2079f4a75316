package schedule

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
)

// writer is every write of a schedule's pass, so that tests see each one (fakeWriter).
type writer interface {
	// CreateBackup creates b; one of that name that exists already is not an error (the
	// name is the scheduled time's: that time is taken).
	CreateBackup(ctx context.Context, b *api.EtcdBackup) error
	// DeleteBackup deletes the backup namespace/name if it is still the one of that UID; one
	// already gone, or replaced, is not an error.
	DeleteBackup(ctx context.Context, namespace, name string, uid types.UID) error
	// WriteStatus writes st as s's status, unless s was changed since it was read.
	WriteStatus(ctx context.Context, s *api.EtcdBackupSchedule, st api.EtcdBackupScheduleStatus) error
	// Event records an Event on s.
	Event(s *api.EtcdBackupSchedule, eventType string, reason EventReason, message string)
}

// apiWriter writes through the API server.
type apiWriter struct {
	client   versioned.Interface
	recorder record.EventRecorder
}

var _ writer = (*apiWriter)(nil)

func (w *apiWriter) CreateBackup(ctx context.Context, b *api.EtcdBackup) error {
	_, err := w.client.EtcdV1alpha1().EtcdBackups(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating backup %s: %w", b.Name, err)
	}
	return nil
}

func (w *apiWriter) DeleteBackup(ctx context.Context, namespace, name string, uid types.UID) error {
	err := w.client.EtcdV1alpha1().EtcdBackups(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting backup %s: %w", name, err)
	}
	return nil
}

func (w *apiWriter) WriteStatus(ctx context.Context, s *api.EtcdBackupSchedule, st api.EtcdBackupScheduleStatus) error {
	c := s.DeepCopy()
	c.Status = st
	if _, err := w.client.EtcdV1alpha1().EtcdBackupSchedules(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

func (w *apiWriter) Event(s *api.EtcdBackupSchedule, eventType string, reason EventReason, message string) {
	if w.recorder != nil {
		w.recorder.Event(s, eventType, string(reason), message)
	}
}

// EventReason is the reason of an Event on an EtcdBackupSchedule.
type EventReason string

// The Events of a schedule.
const (
	// EventBackupCreated: a backup was created for a scheduled time.
	EventBackupCreated EventReason = "BackupCreated"
	// EventBackupDeleted: retention deleted a backup.
	EventBackupDeleted EventReason = "BackupDeleted"
	// EventInvalidSchedule: spec.schedule or spec.timeZone cannot be read.
	EventInvalidSchedule EventReason = "InvalidSchedule"
	// EventMissedSchedule: a scheduled time was missed by more than the starting deadline
	// and is not taken.
	EventMissedSchedule EventReason = "MissedSchedule"
)
