package member

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

const (
	// DataMountPath is where the data volume is mounted.
	DataMountPath = "/var/lib/etcd"
	// DataDir is etcd's --data-dir: a directory inside the volume, which etcd creates with
	// the 0700 permissions it wants (a volume's root is often group-writable).
	DataDir = DataMountPath + "/data"
	// DataVolumeName is the name of the volume that holds DataDir.
	DataVolumeName = "data"
	// EtcdContainerName is the name of the container that runs etcd.
	EtcdContainerName = naming.EtcdContainerName
	// InstallContainerName is the name of the init container that copies the agent binary
	// (cmd/etcd-operator-agent, in the operator's image) into a joining member's pod, for its etcd container to wait with until the member has
	// been registered in the cluster.
	InstallContainerName = "install-member-init"
	// MemberInitVolumeName is the volume the binary is copied to, mounted at MemberInitDir.
	MemberInitVolumeName = "member-init"
	MemberInitDir        = "/opt/etcd-operator"
	// MemberInitPath is the copied binary, which the etcd container of a joining member runs.
	MemberInitPath = MemberInitDir + "/etcd-operator"
	// PodInfoVolumeName is the downward-API volume, mounted at PodInfoDir, through which
	// member-init reads the pod's AnnotationMemberID from the file MemberIDFileName.
	PodInfoVolumeName = "pod-info"
	PodInfoDir        = "/etc/etcd-operator"
	MemberIDFileName  = "member-id"
	// EtcdBinary is etcd's binary in the etcd image.
	EtcdBinary = "/usr/local/bin/etcd"
	// MemberInitCommand and InstallCommand are the agent binary's subcommands a member pod
	// runs.
	MemberInitCommand = memberinit.Command
	InstallCommand    = memberinit.InstallCommand
)

// dataVolume returns the data volume a spec asks for: the member's claim, or an emptyDir.
func dataVolume(c *api.EtcdCluster, ordinal int) corev1.Volume {
	if HasClaims(&c.Spec) {
		return corev1.Volume{Name: DataVolumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(c.Name, ordinal)}}}
	}
	ed := &corev1.EmptyDirVolumeSource{}
	if c.Spec.Storage != nil && c.Spec.Storage.EmptyDir != nil {
		ed = c.Spec.Storage.EmptyDir.DeepCopy()
	}
	return corev1.Volume{Name: DataVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: ed}}
}

// DataClaim is the claim a member pod keeps its data on; empty for an emptyDir.
func DataClaim(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == DataVolumeName && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// etcdContainer is the container that runs the member's etcd (of the given version).
func etcdContainer(c *api.EtcdCluster, t Template, policy *api.PodPolicy, version string) corev1.Container {
	readyPath, livePath := probePaths(version)
	ports := []corev1.ContainerPort{
		{Name: ClientPortName, ContainerPort: ClientPort, Protocol: corev1.ProtocolTCP},
		{Name: "peer", ContainerPort: PeerPort, Protocol: corev1.ProtocolTCP},
	}
	mode := t.clientMode(c)
	if mode.TLS() {
		ports = append(ports, corev1.ContainerPort{Name: MetricsPortName, ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP})
	}
	mounts := []corev1.VolumeMount{{Name: DataVolumeName, MountPath: DataMountPath}}
	if t.peerListen(c).TLS() || mode.TLS() {
		mounts = append(mounts, corev1.VolumeMount{Name: TLSVolumeName, MountPath: TLSDir, ReadOnly: true})
	}
	return corev1.Container{
		Name:            EtcdContainerName,
		Image:           ImageFor(c.Spec.Repository, version),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{EtcdBinary},
		Args:            etcdArgs(c, t, version),
		Env:             append(etcdctlEnv(c, t.Ordinal, mode), userEnv(policy.Env)...),
		Ports:           ports,
		Resources:       resources(policy.Resources),
		VolumeMounts:    mounts,
		// Probed every second: a member's comeback (after a restart, and before a rollout's
		// next member) waits for it.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     httpProbe(readyPath, probePort(mode)),
			PeriodSeconds:    1,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		},
		// Generous: restarting a slow but live member only makes it slower.
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        httpProbe(livePath, probePort(mode)),
			InitialDelaySeconds: 10,
			PeriodSeconds:       10,
			TimeoutSeconds:      15,
			FailureThreshold:    8,
		},
		SecurityContext:          restrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// tlsVolume is the member's own Secret (TLSSecretName), for a cluster with TLS on either port.
// The Secret is not optional: a member without its certificates would only fail, so its pod
// waits for the Secret instead.
func tlsVolume(c *api.EtcdCluster, ordinal int) corev1.Volume {
	return corev1.Volume{Name: TLSVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: TLSSecretName(c.Name, ordinal), DefaultMode: ptr.To(tlsSecretMode)}}}
}

// affinity is the pod policy's affinity with, unless the policy has a pod anti-affinity of its
// own, a preference for one member per node: a node that goes down then takes one member
// with it, not a quorum. A preference, not a rule: a cluster larger than the number of nodes
// still starts.
func affinity(cluster string, policy *corev1.Affinity) *corev1.Affinity {
	a := policy.DeepCopy()
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(cluster)},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		}
	}
	return a
}

// restrictedContainer is the container half of the "restricted" Pod Security Standard; the
// user and group come from the pod's security context.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// nonRootUID runs members as the distroless "nonroot" user unless the pod policy says else.
const nonRootUID int64 = 65532
