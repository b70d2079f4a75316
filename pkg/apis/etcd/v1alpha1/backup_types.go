package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// EtcdBackup is one snapshot of one EtcdCluster of its namespace, taken once: the operator
// streams it from one healthy member (a follower by preference) to the destination, in a
// pod that runs the operator's own binary, verifies it, and reports where it is. To take
// another snapshot, create another EtcdBackup.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=etcdbackups,singular=etcdbackup,shortName=etcdbk,scope=Namespaced
// +kubebuilder:metadata:annotations="etcd.operator.dev/schema-revision=2"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`,description="The EtcdCluster snapshotted"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Running, Succeeded or Failed"
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`,description="etcd revision of the snapshot"
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.sizeBytes`,description="Bytes written"
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.location`,priority=1,description="Where the snapshot is"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the backup was created"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50",message="metadata.name must be at most 50 characters: the backup's pods are named <name>-attempt<n>",fieldPath=".metadata"
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the backup asked for. It cannot change once created.
	Spec EtcdBackupSpec `json:"spec"`
	// Status is what the operator last observed of the backup.
	// +optional
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// EtcdBackupSpec is the snapshot to take and where it goes.
// +kubebuilder:validation:XValidation:rule="self.clusterName == oldSelf.clusterName && self.destination == oldSelf.destination",message="spec.clusterName and spec.destination cannot change: create another EtcdBackup"
type EtcdBackupSpec struct {
	// ClusterName is the EtcdCluster of the backup's namespace to snapshot.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	ClusterName string `json:"clusterName"`

	// Destination is where the snapshot is written.
	Destination BackupDestination `json:"destination"`

	// DeletionPolicy says what becomes of the snapshot when the EtcdBackup is deleted:
	// Retain (the default) keeps the file; Delete deletes it first (the EtcdBackup carries a
	// finalizer until it is).
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy BackupDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// BackupDeletionPolicy says whether a snapshot goes with its EtcdBackup.
type BackupDeletionPolicy string

// The deletion policies.
const (
	// BackupRetain keeps the snapshot when the EtcdBackup is deleted.
	BackupRetain BackupDeletionPolicy = "Retain"
	// BackupDelete deletes the snapshot before the EtcdBackup goes.
	BackupDelete BackupDeletionPolicy = "Delete"
)

// BackupFinalizer holds an EtcdBackup whose deletionPolicy is Delete until its snapshot is
// deleted.
const BackupFinalizer = "etcd.operator.dev/delete-snapshot"

// BackupPhase is a one-word summary of a backup's state.
type BackupPhase string

// The phases of a backup.
const (
	// BackupPending: the backup has not started; its pod is being created or scheduled.
	BackupPending BackupPhase = "Pending"
	// BackupRunning: the backup's pod is streaming the snapshot.
	BackupRunning BackupPhase = "Running"
	// BackupSucceeded: the snapshot is written, verified and at status.location. Final.
	BackupSucceeded BackupPhase = "Succeeded"
	// BackupFailed: the backup gave up; the Failed condition says why. Final.
	BackupFailed BackupPhase = "Failed"
)

// The condition types of an EtcdBackup.
const (
	// BackupConditionComplete is True once the snapshot is written and verified.
	BackupConditionComplete ConditionType = "Complete"
	// BackupConditionFailed is True once the backup has given up; its reason says why.
	BackupConditionFailed ConditionType = "Failed"
)

// The reasons of an EtcdBackup's conditions.
const (
	// ReasonBackupCompleted: the snapshot is written and verified.
	ReasonBackupCompleted ConditionReason = "Completed"
	// ReasonClusterNotFound: spec.clusterName names no EtcdCluster of the namespace.
	ReasonClusterNotFound ConditionReason = "ClusterNotFound"
	// ReasonClaimNotFound: the destination's claim does not exist.
	ReasonClaimNotFound ConditionReason = "ClaimNotFound"
	// ReasonSecretNotFound: an S3 destination's credentialsSecret or caSecret does not
	// exist, or lacks one of its keys.
	ReasonSecretNotFound ConditionReason = "SecretNotFound"
	// ReasonStoreAccessDenied: the S3 store refused the credentials, or refused them the
	// bucket; the message quotes the store. It is not tried again.
	ReasonStoreAccessDenied ConditionReason = "StoreAccessDenied"
	// ReasonBucketNotFound: the S3 store has no such bucket. It is not tried again.
	ReasonBucketNotFound ConditionReason = "BucketNotFound"
	// ReasonStoreUnreachable: the S3 endpoint did not answer (a name that does not resolve,
	// a connection refused or timed out, a certificate not trusted), in each attempt.
	ReasonStoreUnreachable ConditionReason = "StoreUnreachable"
	// ReasonBackupPodCannotStart: the backup's pod was not running within its bound (a claim
	// that cannot bind, no node, an image that cannot be pulled); the message quotes why.
	ReasonBackupPodCannotStart ConditionReason = "PodCannotStart"
	// ReasonBackupNoQuorum: no member answered with a leader and a linearizable read, so no
	// snapshot known to be current could be taken.
	ReasonBackupNoQuorum ConditionReason = "NoQuorum"
	// ReasonBackupNoSpace: the destination is full (ENOSPC, or the store's quota).
	ReasonBackupNoSpace ConditionReason = "NoSpace"
	// ReasonSnapshotCorrupt: the snapshot received failed etcd's integrity check.
	ReasonSnapshotCorrupt ConditionReason = "SnapshotCorrupt"
	// ReasonBackupAttemptsExhausted: every attempt failed; the message quotes the last.
	ReasonBackupAttemptsExhausted ConditionReason = "AttemptsExhausted"
)

// EtcdBackupStatus is what the operator observed of a backup.
type EtcdBackupStatus struct {
	// Phase: Pending, Running, Succeeded or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Revision is the etcd revision the snapshot holds.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// SizeBytes is the size of the snapshot file, etcd's integrity hash included.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// SHA256 is the hex SHA-256 of the whole snapshot file.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// EtcdVersion is the etcd version of the member the snapshot was taken from.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Member is the member the snapshot was taken from.
	// +optional
	Member string `json:"member,omitempty"`
	// Location is the snapshot's path inside the destination: for a volume, relative to the
	// claim's root; for S3, the object's key in the bucket.
	// +optional
	Location string `json:"location,omitempty"`
	// StartTime is when the operator started the backup.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the backup succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Attempts is how many backup pods were started.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Conditions: Complete and Failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackupList is a list of EtcdBackups.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the backups.
	Items []EtcdBackup `json:"items"`
}
