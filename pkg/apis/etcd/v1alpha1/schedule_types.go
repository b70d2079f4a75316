package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// EtcdBackupSchedule takes EtcdBackups of one EtcdCluster on a cron schedule and keeps the
// newest of them: at each scheduled time the operator creates an EtcdBackup named
// <schedule>-<minutes since the Unix epoch of that time>, which it owns, from
// spec.backupTemplate; it deletes the Succeeded ones it created beyond the newest spec.keep.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=etcdbackupschedules,singular=etcdbackupschedule,shortName=etcdbks,scope=Namespaced
// +kubebuilder:metadata:annotations="etcd.operator.dev/schema-revision=2"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`,description="The cron schedule"
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`,description="Whether no backup is taken"
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`,description="The scheduled time of the last backup created"
// +kubebuilder:printcolumn:name="Last Successful",type=date,JSONPath=`.status.lastSuccessfulTime`,description="When the last backup that succeeded completed"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the schedule was created"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 41",message="metadata.name must be at most 41 characters: its backups are named <name>-<minutes since 1970>, at most 50",fieldPath=".metadata"
type EtcdBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the schedule asked for.
	Spec EtcdBackupScheduleSpec `json:"spec"`
	// Status is what the operator last observed of the schedule.
	// +optional
	Status EtcdBackupScheduleStatus `json:"status,omitempty"`
}

// EtcdBackupScheduleSpec is when backups are taken, what each is, and how many are kept.
type EtcdBackupScheduleSpec struct {
	// Schedule is a cron expression of five fields (minute, hour, day of month, month, day
	// of week: "0 */6 * * *"), or one of @yearly, @monthly, @weekly, @daily, @hourly. The
	// operator checks it: one it cannot parse makes the Ready condition False with reason
	// InvalidSchedule, and no backup is taken.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="schedule must not set a time zone (TZ= or CRON_TZ=): use spec.timeZone"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('@every')",message="schedule must be a cron expression or @yearly, @monthly, @weekly, @daily or @hourly: @every is not supported"
	Schedule string `json:"schedule"`

	// TimeZone is the IANA name of the time zone the schedule is read in ("Europe/Paris");
	// UTC when empty. The operator checks it: a name it does not know makes the Ready
	// condition False with reason InvalidSchedule.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self != 'Local'",message="timeZone must be an IANA name such as Europe/Paris: Local is the operator's own"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// Keep is how many Succeeded backups of this schedule are kept: once a backup succeeds,
	// the operator deletes the oldest Succeeded ones it created beyond this many (their
	// snapshots go as their deletionPolicy says). It never deletes the last Succeeded one.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=7
	// +optional
	Keep int32 `json:"keep,omitempty"`

	// Suspend stops new backups while true; the backups already made, and their retention,
	// are kept. When it goes back to false, a scheduled time missed less than an hour ago is
	// taken at once, and no other.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// BackupTemplate is the spec of every EtcdBackup the schedule creates. A change applies
	// to the backups created after it.
	BackupTemplate ScheduledBackupSpec `json:"backupTemplate"`
}

// ScheduledBackupSpec is the spec of a scheduled backup: an EtcdBackupSpec whose
// deletionPolicy defaults to Delete, so that retention deletes the snapshots it no longer
// keeps.
type ScheduledBackupSpec struct {
	// ClusterName is the EtcdCluster of the schedule's namespace to snapshot.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	ClusterName string `json:"clusterName"`

	// Destination is where the snapshots are written.
	Destination BackupDestination `json:"destination"`

	// DeletionPolicy says what becomes of a snapshot when its EtcdBackup is deleted, by
	// retention or by hand: Delete (the default here) deletes the file; Retain keeps it on
	// the claim, where retention no longer counts it.
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy BackupDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// The condition type of an EtcdBackupSchedule.
const (
	// ScheduleConditionReady is True while the schedule takes backups; False with reason
	// InvalidSchedule or Suspended when it does not.
	ScheduleConditionReady ConditionType = "Ready"
)

// The reasons of an EtcdBackupSchedule's Ready condition.
const (
	// ReasonScheduled: the schedule is valid and in effect.
	ReasonScheduled ConditionReason = "Scheduled"
	// ReasonInvalidSchedule: spec.schedule or spec.timeZone cannot be read; the message says
	// which and why.
	ReasonInvalidSchedule ConditionReason = "InvalidSchedule"
	// ReasonSuspended: spec.suspend is true.
	ReasonSuspended ConditionReason = "Suspended"
)

// EtcdBackupScheduleStatus is what the operator observed of a schedule.
type EtcdBackupScheduleStatus struct {
	// LastScheduleTime is the scheduled time of the last backup the schedule created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulTime is when the newest Succeeded backup of the schedule completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// NextScheduleTime is the next scheduled time, unless the schedule is suspended or
	// invalid.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Active names the schedule's backups that are neither Succeeded nor Failed yet.
	// +listType=set
	// +optional
	Active []string `json:"active,omitempty"`
	// ObservedGeneration is the generation of the spec this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackupScheduleList is a list of EtcdBackupSchedules.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type EtcdBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the schedules.
	Items []EtcdBackupSchedule `json:"items"`
}
