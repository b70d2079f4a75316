package schedule

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// KindName is the schedule's kind, as the ownerReferences of its backups name it.
const KindName = "EtcdBackupSchedule"

// What a scheduled backup carries besides its controller ownerReference, which alone makes
// it the schedule's.
const (
	// LabelSchedule names the schedule that created a backup, for kubectl get -l.
	LabelSchedule = "etcd.operator.dev/schedule"
	// AnnotationScheduledAt is the scheduled time a backup was made for, in RFC 3339, UTC.
	AnnotationScheduledAt = "etcd.operator.dev/scheduled-at"
)

// BackupName is the name of the backup of schedule for the scheduled time at:
// <schedule>-<minutes since the Unix epoch>. The same time always gives the same name, so a
// pass retried, or run again by a restarted operator, never makes two backups for one time.
func BackupName(schedule string, at time.Time) string {
	return schedule + "-" + strconv.FormatInt(at.Unix()/60, 10)
}

// Backup is the EtcdBackup schedule s creates for the scheduled time at: its backupTemplate,
// owned by s. The reference does not block the owner's deletion, which would need update
// on etcdbackupschedules/finalizers where the OwnerReferencesPermissionEnforcement admission
// plugin runs; deleting a schedule still deletes its backups (the garbage collector).
func Backup(s *api.EtcdBackupSchedule, at time.Time) *api.EtcdBackup {
	ref := metav1.NewControllerRef(s, api.SchemeGroupVersion.WithKind(KindName))
	ref.BlockOwnerDeletion = nil
	t := s.Spec.BackupTemplate
	policy := t.DeletionPolicy
	if policy == "" {
		policy = api.BackupDelete
	}
	return &api.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            BackupName(s.Name, at),
			Namespace:       s.Namespace,
			Labels:          map[string]string{LabelSchedule: s.Name},
			Annotations:     map[string]string{AnnotationScheduledAt: at.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{*ref},
		},
		Spec: api.EtcdBackupSpec{
			ClusterName:    t.ClusterName,
			Destination:    *t.Destination.DeepCopy(),
			DeletionPolicy: policy,
		},
	}
}

// ownedOf is what a pass needs of backup b of the schedule: its scheduled time is its
// annotation's, or its creation time when that cannot be read.
func ownedOf(b *api.EtcdBackup) owned {
	o := owned{name: b.Name, uid: b.UID, phase: b.Status.Phase, deleting: b.DeletionTimestamp != nil,
		scheduled: b.CreationTimestamp.Time}
	if at, err := time.Parse(time.RFC3339, b.Annotations[AnnotationScheduledAt]); err == nil {
		o.scheduled = at
	}
	if b.Status.CompletionTime != nil {
		o.completed = b.Status.CompletionTime.Time
	}
	return o
}
