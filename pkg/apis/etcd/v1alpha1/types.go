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
	DefaultVersion = "3.6.16"
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
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`,description="Desired number of members"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`,description="Members that are started, healthy and voting"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`,description="etcd version the members run"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="One-word summary of the cluster's state"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the cluster was created"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50",message="metadata.name must be at most 50 characters: member pods are named <name>-<ordinal> and the client Service <name>-client, which must fit a 63-character DNS label",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a lowercase letter and contain only lowercase letters, digits and '-': it names the cluster's Services, which must be DNS-1035 labels",fieldPath=".metadata"
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
	// +kubebuilder:default="3.6.16"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$')",message="version must be an etcd release as MAJOR.MINOR.PATCH with an optional leading v, for example 3.6.16"
	// +optional
	Version string `json:"version,omitempty"`

	// Repository is the image repository of the etcd images, without a tag.
	// +kubebuilder:default="gcr.io/etcd-development/etcd"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.matches(':[^/]*$')",message="repository must not carry a tag or digest: the tag comes from spec.version"
	// +optional
	Repository string `json:"repository,omitempty"`

	// Paused stops every change to the cluster's members and pods; status is still reported.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Pod customizes the member pods.
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`

	// Storage chooses where members keep their data. Without it each member keeps its data in
	// an emptyDir volume, which lives as long as its pod.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
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

	// Resources of the etcd container.
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

	// Env adds environment variables to the etcd container. Variables the operator sets
	// itself (ETCD_NAME, ETCD_INITIAL_CLUSTER, ...) cannot be overridden.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// SecurityContext of the member pods.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// PriorityClassName of the member pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// StorageSpec chooses the volume that holds each member's data directory.
type StorageSpec struct {
	// EmptyDir configures the emptyDir volume that holds a member's data: its medium
	// (Memory for tmpfs) and size limit.
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`
}

// ClusterPhase is a one-word summary of a cluster's state, for humans. Automation should read
// the conditions instead.
type ClusterPhase string

// The phases a cluster goes through.
const (
	// PhasePending: no member exists yet.
	PhasePending ClusterPhase = "Pending"
	// PhaseBootstrapping: the seed member is starting.
	PhaseBootstrapping ClusterPhase = "Bootstrapping"
	// PhaseScaling: members are being added or removed toward spec.size.
	PhaseScaling ClusterPhase = "Scaling"
	// PhaseRecovering: a lost member is being replaced.
	PhaseRecovering ClusterPhase = "Recovering"
	// PhaseRunning: every member is healthy and the size is spec.size.
	PhaseRunning ClusterPhase = "Running"
	// PhaseDegraded: the cluster needs a repair the operator cannot make now.
	PhaseDegraded ClusterPhase = "Degraded"
	// PhasePaused: spec.paused is set; nothing is changed.
	PhasePaused ClusterPhase = "Paused"
)

// ConditionType names a condition of an EtcdCluster.
type ConditionType string

// The condition types of an EtcdCluster.
const (
	// ConditionAvailable is True when the cluster has quorum and every member is healthy,
	// voting, and their count is spec.size.
	ConditionAvailable ConditionType = "Available"
	// ConditionProgressing is True while the operator is changing the cluster.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionDegraded is True when something is wrong that the operator is not (yet)
	// repairing, or refuses to repair because the step could cost quorum.
	ConditionDegraded ConditionType = "Degraded"
)

// ConditionReason is the machine-readable reason of a condition.
type ConditionReason string

// The reasons the conditions carry.
const (
	// ReasonClusterHealthy: every member is healthy and voting, and the size is spec.size.
	ReasonClusterHealthy ConditionReason = "ClusterHealthy"
	// ReasonMembersUnhealthy: some members are not healthy or not voting.
	ReasonMembersUnhealthy ConditionReason = "MembersUnhealthy"
	// ReasonSizeMismatch: the member count differs from spec.size.
	ReasonSizeMismatch ConditionReason = "SizeMismatch"
	// ReasonNoQuorum: fewer than a majority of the voting members are healthy.
	ReasonNoQuorum ConditionReason = "NoQuorum"
	// ReasonBootstrapping: the seed member is being created.
	ReasonBootstrapping ConditionReason = "Bootstrapping"
	// ReasonScalingUp: a member is being added.
	ReasonScalingUp ConditionReason = "ScalingUp"
	// ReasonScalingDown: a member is being removed.
	ReasonScalingDown ConditionReason = "ScalingDown"
	// ReasonReplacingMember: a lost member is being replaced under the same name.
	ReasonReplacingMember ConditionReason = "ReplacingMember"
	// ReasonReconciled: the cluster matches its spec; nothing to do.
	ReasonReconciled ConditionReason = "Reconciled"
	// ReasonPaused: spec.paused is set.
	ReasonPaused ConditionReason = "Paused"
	// ReasonWaiting: a step waits for the cluster to become healthy before it may proceed.
	ReasonWaiting ConditionReason = "Waiting"
	// ReasonQuorumAtRisk: the next step was refused because it could cost quorum.
	ReasonQuorumAtRisk ConditionReason = "QuorumAtRisk"
	// ReasonInvalidSpec: the spec asks for something the operator cannot do.
	ReasonInvalidSpec ConditionReason = "InvalidSpec"
	// ReasonVersionChangeUnsupported: spec.version differs from the version the cluster runs,
	// and the operator does not change the version of a running cluster yet.
	ReasonVersionChangeUnsupported ConditionReason = "VersionChangeUnsupported"
	// ReasonEtcdUnreachable: no member answered the operator.
	ReasonEtcdUnreachable ConditionReason = "EtcdUnreachable"
	// ReasonAsExpected: nothing is wrong.
	ReasonAsExpected ConditionReason = "AsExpected"
)

// EtcdClusterStatus is what the operator last observed of a cluster.
type EtcdClusterStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is a one-word summary of the cluster's state.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// Conditions: Available, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Size is the number of members in etcd's member list.
	// +optional
	Size int32 `json:"size"`

	// ReadyMembers is the number of members that are started, healthy and voting.
	// +optional
	ReadyMembers int32 `json:"readyMembers"`

	// Selector is the label selector of the member pods, in string form, for the scale
	// subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Members lists etcd's members, ordered by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Members []MemberStatus `json:"members,omitempty"`

	// CurrentVersion is the etcd version the members run.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// ServiceName is the headless Service that gives each member its stable DNS name.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// ClientURL is the URL clients in the cluster use to reach etcd.
	// +optional
	ClientURL string `json:"clientURL,omitempty"`
}

// MemberStatus is one etcd member as the operator last saw it.
type MemberStatus struct {
	// Name is the member's name, which is also its pod's name.
	Name string `json:"name"`
	// ID is etcd's member ID, in hexadecimal.
	// +optional
	ID string `json:"id,omitempty"`
	// Ready is true when the member answered a health check and is a voting member.
	// +optional
	Ready bool `json:"ready"`
	// Leader is true for the member that leads the raft group.
	// +optional
	Leader bool `json:"leader,omitempty"`
	// Learner is true while the member is a non-voting learner catching up.
	// +optional
	Learner bool `json:"learner,omitempty"`
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
