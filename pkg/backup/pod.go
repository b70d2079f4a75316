package backup

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Labels of a backup's pods, besides member.LabelBackupCluster (the cluster they snapshot,
// which the cluster's NetworkPolicy lets in).
const (
	LabelBackup = "etcd.operator.dev/backup"
	// LabelBackupRole is RoleTake on the pods that take the snapshot, RoleDelete on the pod
	// that deletes it.
	LabelBackupRole = "etcd.operator.dev/backup-role"
	RoleTake        = "take"
	RoleDelete      = "delete"
)

// Where a backup pod mounts the destination, and the operator binary in the operator image,
// which runs the backup subcommand in the agent binary beside it.
const (
	destinationVolume = "destination"
	destinationMount  = "/backup"
	// clientTLSVolume is the cluster's client Secret (member.ClientTLSSecretName), mounted
	// read-only at clientTLSMount when the cluster's client port uses TLS.
	clientTLSVolume = "client-tls"
	clientTLSMount  = "/etc/etcd-client-tls"
	operatorBinary  = "/etcd-operator"
	containerName   = "backup"
)

// attemptDeadline bounds one attempt once its pod has started (activeDeadlineSeconds): a
// member that stalls mid-stream fails the attempt instead of holding it forever.
const attemptDeadline int64 = 2 * 60 * 60

// kindName is the EtcdBackup kind, as its pods' ownerReferences name it.
const kindName = "EtcdBackup"

// AttemptPodName is the pod of a backup's attempt (1, 2, ...): <backup>-attempt<n>. No name
// of the form <name>-<digits> is used, so that a backup's pod never has the name of a member
// pod of any cluster.
func AttemptPodName(backup string, attempt int) string {
	return backup + attemptInfix + strconv.Itoa(attempt)
}

const attemptInfix = "-attempt"

// DeletePodName is the pod that deletes a backup's snapshot.
func DeletePodName(backup string) string { return backup + "-delete" }

// attemptOf is the attempt number of a pod named by AttemptPodName, 0 for any other name.
func attemptOf(backup, pod string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(pod, backup+attemptInfix))
	if err != nil || !strings.HasPrefix(pod, backup+attemptInfix) || n <= 0 {
		return 0
	}
	return n
}

// SnapshotName is the file name of a backup's snapshot without its revision:
// <cluster>-<backup>.
func SnapshotName(b *api.EtcdBackup) string { return b.Spec.ClusterName + "-" + b.Name }

// endpoints are the voting members status lists for the cluster, at their stable names.
func endpoints(c *api.EtcdCluster) []snapshot.Endpoint {
	var out []snapshot.Endpoint
	for _, m := range c.Status.Members {
		o, ok := member.Ordinal(c.Name, m.Name)
		if !ok || m.Learner {
			continue
		}
		out = append(out, snapshot.Endpoint{Name: m.Name, URL: member.ClientURLOf(c, member.PeerURL(c, o))})
	}
	return out
}

// AttemptPod is the pod of one attempt of backup b of cluster c: the operator's image
// running `etcd-operator backup`, with the destination's claim, or its S3 credentials (and
// CA), mounted there alone and, when
// the cluster's client port uses TLS, the cluster's client Secret (read-only), whose
// certificate it dials the members with. It needs no API credentials: it reports through its
// termination message.
func AttemptPod(b *api.EtcdBackup, c *api.EtcdCluster, attempt int, image string) *corev1.Pod {
	args := snapshot.Args{Options: snapshot.Options{Members: endpoints(c), Name: SnapshotName(b)}}
	if s3 := b.Spec.Destination.S3; s3 != nil {
		args.Path = ObjectPrefix(b)
	} else {
		args.Root, args.Path = destinationMount, b.Spec.Destination.Volume.Path
	}
	if !member.ClientTLS(c) {
		return pod(b, AttemptPodName(b.Name, attempt), RoleTake, image, args)
	}
	args.TLS = etcdutil.TLSFiles{
		CertFile: clientTLSMount + "/" + corev1.TLSCertKey,
		KeyFile:  clientTLSMount + "/" + corev1.TLSPrivateKeyKey,
		CAFile:   clientTLSMount + "/" + member.KeyCA,
	}
	p := pod(b, AttemptPodName(b.Name, attempt), RoleTake, image, args)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: clientTLSVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: member.ClientTLSSecretName(c.Name), DefaultMode: ptr.To(clientTLSMode)}}})
	ctr := &p.Spec.Containers[0]
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: clientTLSVolume, MountPath: clientTLSMount, ReadOnly: true})
	return p
}

// clientTLSMode lets the pod's fsGroup, which the backup's user is in, read the client
// Secret, and no other user of the node.
const clientTLSMode int32 = 0o440

// DeletePod is the pod that deletes the files rel (relative to the claim's root), or the
// objects of those keys, of backup b.
func DeletePod(b *api.EtcdBackup, image string, rel []string) *corev1.Pod {
	args := snapshot.Args{Delete: rel}
	if b.Spec.Destination.S3 == nil {
		args.Root = destinationMount
	}
	return pod(b, DeletePodName(b.Name), RoleDelete, image, args)
}

// ObjectPrefix is where the snapshot of backup b goes in its S3 bucket: the destination's
// prefix, then the backup's namespace, so that backups of the same name in two namespaces
// that share a bucket do not write the same object.
func ObjectPrefix(b *api.EtcdBackup) string {
	return strings.TrimPrefix(path.Join("/", b.Spec.Destination.S3.Prefix, b.Namespace), "/")
}

// pod is a backup's pod running the backup command with args, with the destination's claim,
// or its S3 Secrets, mounted there alone.
func pod(b *api.EtcdBackup, name, role, image string, args snapshot.Args) *corev1.Pod {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	if s3 := b.Spec.Destination.S3; s3 != nil {
		args.S3, vols, mounts = member.S3Access(member.S3SourceOf(s3))
	} else {
		vols = []corev1.Volume{{Name: destinationVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: b.Spec.Destination.Volume.ClaimName}}}}
		mounts = []corev1.VolumeMount{{Name: destinationVolume, MountPath: destinationMount}}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.Namespace,
			Labels: map[string]string{
				member.LabelName: "etcd-backup", member.LabelInstance: b.Name, member.LabelManagedBy: member.ManagedByValue,
				LabelBackup: b.Name, member.LabelBackupCluster: b.Spec.ClusterName, LabelBackupRole: role,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, api.SchemeGroupVersion.WithKind(kindName))},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			ActiveDeadlineSeconds:        ptr.To(attemptDeadline),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(nonRootUID), RunAsGroup: ptr.To(nonRootUID),
				FSGroup: ptr.To(nonRootUID), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: containerName, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{operatorBinary, snapshot.Command},
				Args:         args.Render(),
				VolumeMounts: mounts,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				// The snapshot streams through a small buffer: the limit is what proves it.
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				TerminationMessagePath:   snapshot.DefaultTerminationLog,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: vols,
		},
	}
	return p
}

// nonRootUID is the distroless "nonroot" user the operator image runs as.
const nonRootUID int64 = 65532

// report reads the outcome a finished pod wrote as its termination message.
func report(p *corev1.Pod) (snapshot.Report, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Terminated != nil {
			return snapshot.ReadReport(cs.State.Terminated.Message)
		}
	}
	return snapshot.Report{}, false
}

// whyNotStarted is what the scheduler or the kubelet says of a pod that has not started.
func whyNotStarted(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return fmt.Sprintf("not scheduled: %s", c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
	}
	return "pod " + string(p.Status.Phase)
}
