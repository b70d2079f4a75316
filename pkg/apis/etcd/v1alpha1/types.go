package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults applied by the CRD schema when a field is left out.
const (
	// DefaultRepository is the image repository of the upstream etcd images.
	DefaultRepository = "gcr.io/etcd-development/etcd"
	// DefaultVersion is the etcd version a cluster runs when spec.version is unset.
	DefaultVersion = "3.7.3"
	// DefaultSize is the member count of a cluster whose spec.size is unset.
	DefaultSize int32 = 3
	// MaxSize is the largest member count the schema accepts. Clusters above seven members
	// pay for every write with more replication and gain little availability.
	MaxSize int32 = 9
	// MaxNameLength bounds metadata.name so that every object derived from it fits a
	// 63-character DNS label: member pods <name>-<ordinal> and the Service <name>-client.
	MaxNameLength = 50
)

// EtcdCluster is an etcd cluster run by the operator: it bootstraps one seed member, then adds
// or removes members one at a time toward spec.size, each with a stable identity
// <name>-<ordinal> reachable through the headless Service <name>, and serves clients through
// the Service <name>-client.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=etcdclusters,singular=etcdcluster,shortName=etcd,scope=Namespaced
// +kubebuilder:metadata:annotations="etcd.operator.dev/schema-revision=15"
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`,description="Desired number of members"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`,description="Members that are started, healthy and voting"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`,description="etcd version the members run"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="One-word summary of the cluster's state"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the cluster was created"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50",message="metadata.name must be at most 50 characters: member pods are named <name>-<ordinal> and the client Service <name>-client, which must fit a 63-character DNS label",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a lowercase letter and contain only lowercase letters, digits and '-': it names the cluster's Services, which must be DNS-1035 labels",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.size) || oldSelf.status.size == 0 || !has(self.spec) || !has(self.spec.version) || !self.spec.version.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$') || !has(oldSelf.spec) || !has(oldSelf.spec.version) || !oldSelf.spec.version.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$') || (int(self.spec.version.split('.')[1]) - int(oldSelf.spec.version.split('.')[1]) <= 1 && int(oldSelf.spec.version.split('.')[1]) - int(self.spec.version.split('.')[1]) <= 1)",message="spec.version may change by one minor version at a time once the cluster has started, and never its major version (etcd upgrades and downgrades one minor at a time): between 3.5 and 3.7, set a 3.6 release first and wait until status.currentVersion reports it",fieldPath=".spec.version"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.size) || oldSelf.status.size == 0 || !has(self.spec) || !has(self.spec.version) || !self.spec.version.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$') || !has(oldSelf.status.currentVersion) || !oldSelf.status.currentVersion.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || (int(self.spec.version.split('.')[1]) - int(oldSelf.status.currentVersion.split('.')[1]) <= 1 && int(oldSelf.status.currentVersion.split('.')[1]) - int(self.spec.version.split('.')[1]) <= 1)",message="spec.version must be within one minor version of the version the cluster runs (status.currentVersion): etcd upgrades and downgrades one minor at a time; wait until the rollout under way finishes, then take the next step",fieldPath=".spec.version"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || !has(oldSelf.spec.storage) || !has(oldSelf.status) || !has(oldSelf.status.size) || oldSelf.status.size == 0 || (has(self.spec) && has(self.spec.storage) && has(self.spec.storage.emptyDir) == has(oldSelf.spec.storage.emptyDir) && (!has(self.spec.storage.emptyDir) || self.spec.storage.emptyDir == oldSelf.spec.storage.emptyDir) && has(self.spec.storage.volumeClaimTemplate) == has(oldSelf.spec.storage.volumeClaimTemplate) && (!has(self.spec.storage.volumeClaimTemplate) || self.spec.storage.volumeClaimTemplate == oldSelf.spec.storage.volumeClaimTemplate))",message="spec.storage.emptyDir and spec.storage.volumeClaimTemplate cannot change once the cluster has started: the members' data is on the volumes they describe. Create a new cluster to move the data elsewhere; spec.storage.retentionPolicy may change",fieldPath=".spec.storage"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || !has(oldSelf.spec.tls) || !has(oldSelf.spec.tls.peer) || (has(self.spec) && has(self.spec.tls))",message="spec.tls cannot be dropped while it sets peer: peers use TLS by default, so a manifest without spec.tls does not say to move them off it. To move a running cluster's peers off TLS, keep spec.tls and remove its peer alone (spec.tls: {})",fieldPath=".spec.tls"
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the cluster the user asks for.
	// +optional
	Spec EtcdClusterSpec `json:"spec,omitempty"`
	// Status is what the operator last observed of the cluster.
	// +optional
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterSpec is the desired state of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.peer) || !has(oldSelf.tls) || !has(oldSelf.tls.peer) || self.tls.peer == oldSelf.tls.peer",message="spec.tls.peer cannot change while it is set: this operator version does not move a running cluster's peers onto other certificates. It may be removed (the peers move off TLS, one member at a time) or added (they move onto it)",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.client) || !has(oldSelf.tls) || !has(oldSelf.tls.client) || self.tls.client == oldSelf.tls.client",message="spec.tls.client cannot change while it is set: this operator version does not move a running cluster's client port onto other certificates. It may be added (the client port moves onto TLS, one member at a time) or removed (it moves off)",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap) && (!has(self.bootstrap) || self.bootstrap == oldSelf.bootstrap)",message="spec.bootstrap cannot be added, changed or removed once the cluster exists: it says what the cluster starts from, and applies only when it is created",fieldPath=".bootstrap"
type EtcdClusterSpec struct {
	// Size is the number of etcd members. The operator changes membership one member at a
	// time toward it, and refuses any step that would cost quorum. Odd sizes tolerate the
	// most failures per member: 3 tolerates one lost member, 5 tolerates two.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Size int32 `json:"size"`

	// Version is the etcd version the members run, as MAJOR.MINOR.PATCH with an optional
	// leading "v" (for example 3.6.16). The member image is <repository>:v<version>.
	// +kubebuilder:default="3.7.3"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$')",message="version must be an etcd release as MAJOR.MINOR.PATCH with an optional leading v, for example 3.6.16"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$') || self.matches('^v?3[.](5[.](3[2-9]|[4-9][0-9]|[1-9][0-9][0-9]+)|[67][.][0-9]+)$')",message="version must be an etcd release the operator supports: 3.5.32 or a later 3.5 release (etcd's upgrade guide requires it before 3.6), 3.6.x or 3.7.x"
	// +optional
	Version string `json:"version,omitempty"`

	// Repository is the image repository of the etcd images, without a tag: an optional
	// registry host, then lowercase path components (the image reference grammar the kubelet
	// parses), so that a repository the kubelet would refuse is refused at apply instead.
	// +kubebuilder:default="gcr.io/etcd-development/etcd"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.matches(':[^/]*$')",message="repository must not carry a tag or digest: the tag comes from spec.version"
	// +kubebuilder:validation:XValidation:rule="self.contains('@') || self.matches(':[^/]*$') || self.matches('^(?:(?:localhost(?::[0-9]+)?|(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:[.](?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+(?::[0-9]+)?|(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]):[0-9]+)/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*$')",message="repository must be an image repository: an optional registry host (with a dot or a port, or localhost), then lowercase path components of letters, digits and . _ - separated by /, for example gcr.io/etcd-development/etcd or registry.local:5000/etcd"
	// +optional
	Repository string `json:"repository,omitempty"`

	// Paused stops every change to the cluster's members and pods; status is still reported.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Pod customizes the member pods.
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`

	// Storage chooses where members keep their data: a PersistentVolumeClaim per member
	// (volumeClaimTemplate) or an emptyDir that lives only as long as its pod. Left out, or
	// given with neither (only a retentionPolicy, say), the operator fills it in on the
	// cluster's first pass, keeping the retentionPolicy: a 4Gi claim on the default
	// StorageClass for a new cluster, the emptyDir it already runs on for a cluster created
	// before claims existed. What holds the data cannot change once the cluster has started.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// Recovery says what the operator does when the cluster has lost for good what it cannot
	// repair on its own.
	// +optional
	Recovery *RecoverySpec `json:"recovery,omitempty"`

	// NetworkPolicy, when set, has the operator keep a NetworkPolicy <name> over the member
	// pods: only the members and the operator (which asks what they serve while a CA
	// rotates) reach the peer port (2380), and only the members, the operator and the
	// clients listed here reach the client port (2379). Removing it removes the policy. It
	// takes effect only where the network plugin enforces NetworkPolicies.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// Bootstrap says what a new cluster starts from; left out, it starts empty. It applies
	// only when the cluster is created (its seed member's first start) and cannot change
	// afterwards.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// TLS secures the peer and client ports. Peer TLS is on for clusters created without
	// spec.tls; spec.tls: {} keeps both ports in plaintext.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// QuorumLossPolicy says who decides to recover a cluster that has lost quorum for good.
type QuorumLossPolicy string

// The quorum-loss policies.
const (
	// QuorumLossManual: the operator reports the loss (the Degraded condition with reason
	// QuorumLost) and recovers only once AnnotationRecoverQuorum tells it to.
	QuorumLossManual QuorumLossPolicy = "Manual"
	// QuorumLossFromSurvivor: the operator recovers on its own, from the survivor with the
	// highest raft index, once the loss has been reported for the grace period.
	QuorumLossFromSurvivor QuorumLossPolicy = "FromSurvivor"
)

// DefaultQuorumLossGracePeriodSeconds is how long FromSurvivor waits when
// gracePeriodSeconds is left out.
const DefaultQuorumLossGracePeriodSeconds int32 = 300

// AnnotationRecoverQuorum on an EtcdCluster tells the operator to recover it, once, from a
// quorum lost for good: its value names the member to recover from (for example demo-0), or
// is RecoverFromHighest. The operator acts only while the loss lasts; it writes the name of
// the member it chose in place of RecoverFromHighest, so that the choice outlives the
// survivor's pod, and removes the annotation once quorum is back.
const AnnotationRecoverQuorum = "etcd.operator.dev/recover-quorum"

// AnnotationRotateCA on an EtcdCluster asks the operator to rotate the CAs it made for the
// cluster (<name>-peer-ca, <name>-client-ca): a value it has not honoured yet starts one
// rotation of each (docs/tls.md). Each CA Secret records the value it was rotated for, so that
// the same value never starts a second rotation; set a new one (a date, say) to rotate again.
// A rotation under way finishes before the next starts. Certificates from a Secret spec.tls
// names are rotated by changing that Secret's ca.crt instead.
const AnnotationRotateCA = "etcd.operator.dev/rotate-ca"

// AnnotationClusterID on an EtcdCluster is the ID etcd gave the cluster, in hex, written by
// the operator from the first member list it reads. Before any membership change the operator
// checks that the members it sends it to answer with this ID: a pod IP reused by another etcd
// cluster's pod is never reconfigured. An annotation rather than a status field: it is an
// identity the operator acts on, and it must outlive a status that is rewritten, or lost when
// the object is copied or restored. Remove it only when the cluster was made anew on purpose.
const AnnotationClusterID = "etcd.operator.dev/cluster-id"

// FinalizerClaims is on an EtcdCluster whose whenDeleted is Delete: when the cluster is
// deleted, the operator reads spec.storage.retentionPolicy as it is then, deletes the
// cluster's claims if it still says Delete (leaves them if it says Retain), and only then
// removes the finalizer. The claims are never owned by the cluster, so a switch to Retain
// holds from the moment it is written, even while the operator is down. Removed by hand, it
// lets the cluster go and leaves every claim.
const FinalizerClaims = "etcd.operator.dev/claims"

// RecoverFromHighest, as the value of AnnotationRecoverQuorum, means the survivor with the
// highest raft index.
const RecoverFromHighest = "highest"

// RecoverySpec says how a cluster is recovered.
type RecoverySpec struct {
	// QuorumLoss applies when a majority of the members' data is gone for good (their claims
	// deleted, replaced by empty ones, or found empty) and at least one member's data is
	// left: waiting cannot bring quorum back. Recovering restarts the survivor with
	// --force-new-cluster on its data, as a cluster of one, and grows the cluster back to
	// spec.size; writes the lost majority had that the survivor had not are lost. Manual (the
	// default) reports the loss and waits for the annotation etcd.operator.dev/recover-quorum;
	// FromSurvivor recovers on its own from the survivor with the highest raft index after
	// gracePeriodSeconds. A cluster whose every member's data is gone is reported, never
	// re-created empty.
	// +kubebuilder:validation:Enum=Manual;FromSurvivor
	// +kubebuilder:default=Manual
	// +optional
	QuorumLoss QuorumLossPolicy `json:"quorumLoss,omitempty"`
	// GracePeriodSeconds is how long FromSurvivor waits, from when the loss is first
	// reported, before it recovers: time to bring back a member's data by hand.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`
}

// PodPolicy customizes the pods that run the members.
type PodPolicy struct {
	// Labels added to every member pod. Keys under etcd.operator.dev/ are reserved.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.operator.dev/'))",message="labels under etcd.operator.dev/ are reserved for the operator"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations added to every member pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Resources of the etcd container. A resource given neither a request nor a limit here
	// gets the default request (cpu 50m, memory 128Mi), so that no member pod, the seed
	// included, is BestEffort, the first to be evicted. No limit is set by default: a memory
	// limit kills etcd when its database grows past it.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector constrains member pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Affinity of the member pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations of the member pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Env adds environment variables to the etcd container. etcd reads each of its flags from
	// an ETCD_ variable too, so of those only the ones that tune a member may be set:
	// ETCD_SNAPSHOT_COUNT, ETCD_HEARTBEAT_INTERVAL, ETCD_ELECTION_TIMEOUT,
	// ETCD_AUTO_COMPACTION_MODE, ETCD_AUTO_COMPACTION_RETENTION, ETCD_COMPACTION_BATCH_LIMIT,
	// ETCD_COMPACTION_SLEEP_INTERVAL, ETCD_BACKEND_BATCH_INTERVAL, ETCD_BACKEND_BATCH_LIMIT,
	// ETCD_BACKEND_BBOLT_FREELIST_TYPE, ETCD_MAX_TXN_OPS, ETCD_MAX_REQUEST_BYTES,
	// ETCD_MAX_CONCURRENT_STREAMS, ETCD_GRPC_KEEPALIVE_MIN_TIME, ETCD_GRPC_KEEPALIVE_INTERVAL,
	// ETCD_GRPC_KEEPALIVE_TIMEOUT, ETCD_WARNING_APPLY_DURATION,
	// ETCD_WARNING_UNARY_REQUEST_DURATION, ETCD_METRICS, ETCD_LOG_LEVEL and ETCD_LOG_FORMAT.
	// Every other ETCD_ variable is refused: the operator sets the member's name, data
	// directory, URLs, initial cluster, backend quota and --force-new-cluster itself, and the
	// rest change identity, membership, durability or security (ETCD_UNSAFE_NO_FSYNC,
	// ETCD_STRICT_RECONFIG_CHECK, ETCD_DISCOVERY*, TLS, ...) or are unknown to this operator.
	// Variables without the ETCD_ prefix (GOMAXPROCS, GOMEMLIMIT, ...) are free.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:XValidation:rule="!self.name.startsWith('ETCD_') || self.name in ['ETCD_SNAPSHOT_COUNT', 'ETCD_HEARTBEAT_INTERVAL', 'ETCD_ELECTION_TIMEOUT', 'ETCD_AUTO_COMPACTION_MODE', 'ETCD_AUTO_COMPACTION_RETENTION', 'ETCD_COMPACTION_BATCH_LIMIT', 'ETCD_COMPACTION_SLEEP_INTERVAL', 'ETCD_BACKEND_BATCH_INTERVAL', 'ETCD_BACKEND_BATCH_LIMIT', 'ETCD_BACKEND_BBOLT_FREELIST_TYPE', 'ETCD_MAX_TXN_OPS', 'ETCD_MAX_REQUEST_BYTES', 'ETCD_MAX_CONCURRENT_STREAMS', 'ETCD_GRPC_KEEPALIVE_MIN_TIME', 'ETCD_GRPC_KEEPALIVE_INTERVAL', 'ETCD_GRPC_KEEPALIVE_TIMEOUT', 'ETCD_WARNING_APPLY_DURATION', 'ETCD_WARNING_UNARY_REQUEST_DURATION', 'ETCD_METRICS', 'ETCD_LOG_LEVEL', 'ETCD_LOG_FORMAT']",messageExpression="self.name in ['ETCD_NAME', 'ETCD_DATA_DIR', 'ETCD_LISTEN_PEER_URLS', 'ETCD_LISTEN_CLIENT_URLS', 'ETCD_ADVERTISE_CLIENT_URLS', 'ETCD_INITIAL_ADVERTISE_PEER_URLS', 'ETCD_INITIAL_CLUSTER', 'ETCD_INITIAL_CLUSTER_STATE', 'ETCD_INITIAL_CLUSTER_TOKEN', 'ETCD_FORCE_NEW_CLUSTER', 'ETCD_QUOTA_BACKEND_BYTES'] ? self.name + ' is set by the operator: it derives the member name, data directory, URLs, initial cluster, backend quota (from spec.storage) and --force-new-cluster (quorum recovery) from the spec' : self.name + ' is refused: of the ETCD_ variables spec.pod.env may set only those that tune a member (ETCD_SNAPSHOT_COUNT, ETCD_HEARTBEAT_INTERVAL, ETCD_ELECTION_TIMEOUT, ETCD_AUTO_COMPACTION_*, ETCD_LOG_LEVEL, ...: see kubectl explain etcdcluster.spec.pod.env); the others change identity, membership, durability or security'"
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// SecurityContext of the member pods, merged field by field over the operator's default,
	// which passes the "restricted" Pod Security Standard: runAsNonRoot true, runAsUser,
	// runAsGroup and fsGroup 65532, seccompProfile RuntimeDefault. Setting only fsGroup keeps
	// the rest. Any user or group but root, supplementalGroups, fsGroupChangePolicy, a
	// Localhost seccomp or AppArmor profile, seLinuxOptions and sysctls may be set; runAsNonRoot
	// false, runAsUser 0 and Unconfined seccomp or AppArmor profiles are refused: etcd needs no
	// root, and the members must keep passing the restricted standard. The containers' own
	// security contexts (no privilege escalation, read-only root filesystem, every capability
	// dropped) are fixed.
	// +kubebuilder:validation:XValidation:rule="!has(self.runAsNonRoot) || self.runAsNonRoot",message="securityContext.runAsNonRoot cannot be false: etcd needs no root and member pods keep the restricted Pod Security Standard"
	// +kubebuilder:validation:XValidation:rule="!has(self.runAsUser) || self.runAsUser != 0",message="securityContext.runAsUser cannot be 0 (root): etcd needs no root and member pods keep the restricted Pod Security Standard"
	// +kubebuilder:validation:XValidation:rule="!has(self.seccompProfile) || self.seccompProfile.type != 'Unconfined'",message="securityContext.seccompProfile cannot be Unconfined: member pods keep the restricted Pod Security Standard (RuntimeDefault or Localhost)"
	// +kubebuilder:validation:XValidation:rule="!has(self.appArmorProfile) || self.appArmorProfile.type != 'Unconfined'",message="securityContext.appArmorProfile cannot be Unconfined: member pods keep the restricted Pod Security Standard"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// PriorityClassName of the member pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the clusters.
	Items []EtcdCluster `json:"items"`
}
