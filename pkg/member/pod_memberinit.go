package member

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// RestoreVolumeName is the seed's read-only mount, at RestoreDir, of the claim that holds the
// snapshot it is restored from, or of the folder the snapshot is downloaded to from S3
// (RestoreS3File, by the init container FetchContainerName).
const (
	RestoreVolumeName  = "restore"
	RestoreDir         = "/var/lib/etcd-restore"
	RestoreS3File      = "snapshot.db"
	FetchContainerName = "fetch-snapshot"
)

// readRestore reads back the Template.Restore of a pod built by Pod: the claim of its restore
// volume, or its fetch container's flags, and member-init's restore flags.
func readRestore(p *corev1.Pod) *Restore {
	var claim string
	for _, v := range p.Spec.Volumes {
		if v.Name == RestoreVolumeName && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	var fetch *memberinit.FetchOptions
	for _, ctr := range p.Spec.InitContainers {
		if ctr.Name == FetchContainerName && len(ctr.Args) > 0 && ctr.Args[0] == memberinit.FetchCommand {
			if o, err := memberinit.ParseFetch(ctr.Args[1:]); err == nil {
				fetch = &o
			}
		}
	}
	if claim == "" && fetch == nil {
		return nil
	}
	for _, ctr := range p.Spec.Containers {
		if ctr.Name != EtcdContainerName || len(ctr.Args) == 0 || ctr.Args[0] != MemberInitCommand {
			continue
		}
		o, err := memberinit.Parse(ctr.Args[1:])
		if err != nil || !strings.HasPrefix(o.Restore.From, RestoreDir+"/") {
			return nil
		}
		r := &Restore{ClaimName: claim, Key: strings.TrimPrefix(o.Restore.From, RestoreDir+"/"),
			BumpRevision: o.Restore.BumpRevision, MarkCompacted: o.Restore.MarkCompacted}
		if fetch != nil {
			r.ClaimName, r.Key, r.SHA256, r.S3 = "", fetch.Key, fetch.SHA256, readS3Source(p, fetch.S3)
		}
		return r
	}
	return nil
}

// wrapInMemberInit makes a joining member's etcd container wait for the member to be added:
// an init container copies the agent binary into a volume, and the etcd container runs it
// as `member-init ... -- etcd <flags>`. member-init asks the other members named in
// t.InitialCluster, answers the liveness probe while it waits, and execs etcd when the member
// is listed, or at once when the data dir already holds the member. It answers the probe on
// livePort, where the kubelet probes etcd. Over TLS (Template.dialScheme) it dials the
// members with the pod's client certificate and verifies them by their names with the CA of their
// client-port certificates.
func wrapInMemberInit(c *api.EtcdCluster, t Template, pod *corev1.Pod, initImage, livePath string, livePort int32) {
	var endpoints []string
	for _, o := range t.InitialCluster {
		if o != t.Ordinal {
			endpoints = append(endpoints, clientURLOn(t.dialScheme(c), t.peerURL(c, o)))
		}
	}
	etcd := &pod.Spec.Containers[0]
	wait := memberinit.Options{
		DataDir:      DataDir,
		PeerURL:      t.peerURL(c, t.Ordinal),
		ClusterState: t.ClusterState,
		Endpoints:    endpoints,
		PollInterval: memberinit.DefaultPollInterval,
		DNSWait:      memberinit.DefaultDNSWait,
		LivenessAddr: fmt.Sprintf(":%d", livePort),
		LivenessPath: livePath,
		MemberIDFile: PodInfoDir + "/" + MemberIDFileName,
		Exec:         append(slices.Clone(etcd.Command), etcd.Args...),
	}
	if t.dialScheme(c) == "https" {
		wait.TLS = etcdutil.TLSFiles{
			CertFile: TLSDir + "/" + KeyClientCert,
			KeyFile:  TLSDir + "/" + KeyClientKey,
			CAFile:   TLSDir + "/" + KeyServerCA,
		}
	}
	var fetch *corev1.Container
	if t.ClusterState == etcdutil.ClusterStateNew && t.Restore != nil {
		wait.Restore = memberinit.Restore{From: RestoreDir + "/" + t.Restore.Key,
			BumpRevision: t.Restore.BumpRevision, MarkCompacted: t.Restore.MarkCompacted}
		etcd.VolumeMounts = append(etcd.VolumeMounts, corev1.VolumeMount{Name: RestoreVolumeName, MountPath: RestoreDir, ReadOnly: true})
		source := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: t.Restore.ClaimName, ReadOnly: true}}
		if !t.Restore.S3.IsZero() {
			wait.Restore.From = RestoreDir + "/" + RestoreS3File
			source = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			fetch = fetchContainer(pod, t.Restore, initImage)
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: RestoreVolumeName, VolumeSource: source})
	}
	etcd.Command = []string{MemberInitPath}
	etcd.Args = append([]string{MemberInitCommand}, wait.Args()...)
	etcd.VolumeMounts = append(etcd.VolumeMounts,
		corev1.VolumeMount{Name: MemberInitVolumeName, MountPath: MemberInitDir, ReadOnly: true},
		corev1.VolumeMount{Name: PodInfoVolumeName, MountPath: PodInfoDir, ReadOnly: true})

	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: MemberInitVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: PodInfoVolumeName, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     MemberIDFileName,
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + AnnotationMemberID + "']"},
			}},
		}}})
	pod.Spec.InitContainers = []corev1.Container{installContainer(initImage)}
	if fetch != nil {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, *fetch)
	}
}

// fetchContainer is the init container of a seed restored from S3: the operator's image
// running `etcd-operator fetch-snapshot`, which downloads the snapshot into the restore
// volume and checks it before member-init restores from it. It alone mounts the store's
// credentials; it sees the data volume read-only, to fetch nothing for a seed restored
// already. Its volumes are added to pod.
func fetchContainer(pod *corev1.Pod, r *Restore, initImage string) *corev1.Container {
	cfg, vols, mounts := S3Access(r.S3)
	pod.Spec.Volumes = append(pod.Spec.Volumes, vols...)
	o := memberinit.FetchOptions{S3: cfg, Key: r.Key, To: RestoreDir + "/" + RestoreS3File, SHA256: r.SHA256, DataDir: DataDir}
	return &corev1.Container{
		Name:            FetchContainerName,
		Image:           initImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            append([]string{memberinit.FetchCommand}, o.Args()...),
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: RestoreVolumeName, MountPath: RestoreDir},
			{Name: DataVolumeName, MountPath: DataMountPath, ReadOnly: true},
		}, mounts...),
		SecurityContext:          restrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		// The snapshot streams to the file through a small buffer.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
}

// installContainer is the init container that copies member-init from the operator's image
// initImage into the pod.
func installContainer(initImage string) corev1.Container {
	return corev1.Container{
		Name:                     InstallContainerName,
		Image:                    initImage,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Args:                     []string{InstallCommand, "--to=" + MemberInitPath},
		VolumeMounts:             []corev1.VolumeMount{{Name: MemberInitVolumeName, MountPath: MemberInitDir}},
		SecurityContext:          restrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}
}
