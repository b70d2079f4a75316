package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The storage of an EtcdCluster's members (spec.storage): which volume holds each member's
// data directory, and what becomes of the claims.

// StorageSpec chooses the volume that holds each member's data directory.
// +kubebuilder:validation:XValidation:rule="!(has(self.emptyDir) && has(self.volumeClaimTemplate))",message="storage takes at most one of emptyDir and volumeClaimTemplate; with neither, the operator fills in a claim per member on the default StorageClass"
// +kubebuilder:validation:XValidation:rule="!has(self.emptyDir) || !has(self.emptyDir.sizeLimit) || quantity(string(self.emptyDir.sizeLimit)).compareTo(quantity('512Mi')) >= 0",message="emptyDir.sizeLimit must be at least 512Mi: etcd's backend quota is set from it, with room for the write-ahead log and a copy of the database; a smaller volume holds no usable quota",fieldPath=".emptyDir.sizeLimit"
type StorageSpec struct {
	// EmptyDir keeps each member's data in an emptyDir volume: lost with its pod, so a
	// member whose pod goes is replaced, and losing a majority of pods at once loses the
	// cluster. For throwaway clusters and speed tests. A sizeLimit (at least 512Mi) sets
	// etcd's backend quota as for a claim's size; without one etcd keeps its default quota.
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`

	// VolumeClaimTemplate is the PersistentVolumeClaim each member keeps its data on, named
	// data-<cluster>-<ordinal>. A member whose pod goes is restarted on its claim with the
	// same member ID.
	// +optional
	VolumeClaimTemplate *VolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`

	// RetentionPolicy says what becomes of the claims when the cluster is deleted or scaled
	// down. Only with volumeClaimTemplate.
	// +optional
	RetentionPolicy *RetentionPolicy `json:"retentionPolicy,omitempty"`
}

// VolumeClaimTemplate describes the claim of each member.
type VolumeClaimTemplate struct {
	// Metadata: labels and annotations added to every claim. Keys under etcd.operator.dev/
	// are reserved.
	// +optional
	Metadata ClaimMetadata `json:"metadata,omitempty"`
	// Spec of each claim. Only a filesystem volume with one writer fits etcd: volumeMode
	// Filesystem, accessModes ReadWriteOnce or ReadWriteOncePod, at least 512Mi, and no
	// dataSource (a member must never start on data copied from elsewhere).
	Spec ClaimSpec `json:"spec"`
}

// ClaimMetadata are the labels and annotations of a claim.
type ClaimMetadata struct {
	// Labels added to every claim.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.operator.dev/'))",message="labels under etcd.operator.dev/ are reserved for the operator"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to every claim.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.operator.dev/'))",message="annotations under etcd.operator.dev/ are reserved for the operator"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ClaimSpec is the part of a PersistentVolumeClaim's spec that a member's data claim may set.
type ClaimSpec struct {
	// StorageClassName of the claims; the cluster's default StorageClass when left out.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// AccessModes of the claims: ReadWriteOnce (the default) or ReadWriteOncePod. A member's
	// data has exactly one writer.
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=ReadWriteOnce;ReadWriteOncePod
	// +optional
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// VolumeMode must be Filesystem: etcd keeps its data in files.
	// +kubebuilder:validation:Enum=Filesystem
	// +optional
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`
	// Resources: requests.storage is the size of each claim, at least 512Mi. etcd's backend
	// quota (--quota-backend-bytes) is set from it: what is left after room for the
	// write-ahead log, halved so that a copy of the database (a snapshot received from the
	// leader, a defragmentation) fits beside it, and at most 8Gi.
	// +kubebuilder:validation:XValidation:rule="has(self.requests) && 'storage' in self.requests && quantity(string(self.requests['storage'])).compareTo(quantity('512Mi')) >= 0",message="resources.requests.storage must be at least 512Mi: etcd's backend quota is set from it, with room for the write-ahead log and a copy of the database"
	Resources corev1.VolumeResourceRequirements `json:"resources"`
	// Selector narrows the volumes the claims may bind to.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// VolumeAttributesClassName of the claims.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	VolumeAttributesClassName *string `json:"volumeAttributesClassName,omitempty"`
}

// RetentionPolicyType says whether a claim is kept or deleted.
type RetentionPolicyType string

// The retention choices, as in a StatefulSet's persistentVolumeClaimRetentionPolicy.
const (
	// RetentionRetain keeps the claims.
	RetentionRetain RetentionPolicyType = "Retain"
	// RetentionDelete deletes the claims.
	RetentionDelete RetentionPolicyType = "Delete"
)

// RetentionPolicy says what becomes of the members' claims, in the words of a StatefulSet's
// persistentVolumeClaimRetentionPolicy.
type RetentionPolicy struct {
	// WhenDeleted: Retain (the default) keeps the claims when the EtcdCluster is deleted;
	// applying an EtcdCluster of the same name in the same namespace again brings the
	// cluster back on them, with its data. Delete deletes them with the cluster.
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted RetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled: Delete (the default) deletes the claim of a member removed by a scale-down
	// once its pod is gone. Retain keeps it; its data is then of a removed member, so the
	// claim is replaced by an empty one before that ordinal joins again.
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Delete
	// +optional
	WhenScaled RetentionPolicyType `json:"whenScaled,omitempty"`
}
