package v1alpha1

// BootstrapSpec says what a new cluster starts from.
type BootstrapSpec struct {
	// FromBackup restores the seed member from a snapshot before its first start; the other
	// members then join it as usual. A snapshot that is missing, truncated or corrupt stops
	// the seed from starting (the cluster reports why in its Degraded condition): an empty
	// cluster is never started in its place.
	// +optional
	FromBackup *FromBackupSpec `json:"fromBackup,omitempty"`
}

// FromBackupSpec names the snapshot a cluster is restored from: an EtcdBackup of the
// cluster's namespace, or a destination and the snapshot's key in it (for a snapshot whose
// EtcdBackup is of another cluster, or gone).
// +kubebuilder:validation:XValidation:rule="has(self.backupName) != has(self.destination)",message="fromBackup takes exactly one of backupName and destination"
// +kubebuilder:validation:XValidation:rule="has(self.destination) == has(self.key)",message="fromBackup.key goes with fromBackup.destination: the snapshot's path in it, as an EtcdBackup's status.location says"
// +kubebuilder:validation:XValidation:rule="(has(self.bumpRevision) && self.bumpRevision > 0) == (has(self.markCompacted) && self.markCompacted)",message="fromBackup.bumpRevision (greater than 0) and fromBackup.markCompacted go together: etcdutl snapshot restore takes both or neither"
type FromBackupSpec struct {
	// BackupName is a Succeeded EtcdBackup of the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// Destination is where the snapshot is, as an EtcdBackup's spec.destination. An S3
	// destination's Secrets are read in the cluster's namespace.
	// +optional
	Destination *BackupDestination `json:"destination,omitempty"`
	// Key is the snapshot's path inside the destination (for a volume, relative to the
	// claim's root; for S3, the object's key in the bucket), as an EtcdBackup's
	// status.location says.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="key must be relative to the destination's root and must not contain '..'"
	// +optional
	Key string `json:"key,omitempty"`
	// BumpRevision raises the revision the restored cluster continues from by this much
	// (etcdutl snapshot restore --bump-revision), so that revisions never go back. Clients
	// that watch need it: a watcher that resumes at a revision it saw on the old cluster,
	// after the snapshot, would otherwise be sent revisions used again for other changes. Set
	// it above the number of writes the old cluster took after the snapshot (1000000000 is
	// safe for most). It goes with markCompacted.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BumpRevision int64 `json:"bumpRevision,omitempty"`
	// MarkCompacted marks every revision up to the bumped one as compacted (etcdutl snapshot
	// restore --mark-compacted), so that a watcher resuming at an old revision is told to list
	// again instead of being sent nothing. Kubernetes' API servers and other informer-style
	// clients need it. It goes with bumpRevision: both or neither.
	// +optional
	MarkCompacted bool `json:"markCompacted,omitempty"`
}
