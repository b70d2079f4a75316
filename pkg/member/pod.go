package member

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// AnnotationClusterState records the --initial-cluster-state the pod's etcd starts with
// (Template.ClusterState).
const AnnotationClusterState = "etcd.operator.dev/initial-cluster-state"

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
	// InstallContainerName is the name of the init container that copies the operator binary
	// into a joining member's pod, for its etcd container to wait with until the member has
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
	// MemberInitCommand and InstallCommand are the operator binary's subcommands a member
	// pod runs.
	MemberInitCommand = "member-init"
	InstallCommand    = "install"
)

// Template is what a member pod is built from besides the cluster's spec. Pod writes it into
// the pod and ReadTemplate reads it back: the planner decides from what the pod's etcd was
// really told, and the two stay side by side so that they cannot drift apart.
type Template struct {
	// Ordinal of the member; the pod is named <cluster>-<ordinal>.
	Ordinal int
	// ClusterState is ClusterStateNew for the seed, ClusterStateExisting for a joining member.
	ClusterState etcdutil.ClusterState
	// InitialCluster lists the ordinals of every member of the cluster once this one has
	// been added, itself included, in ascending order.
	InitialCluster []int
	// Version is the etcd version the member runs; empty means spec.version.
	Version string
	// MemberID is the etcd ID of the member when the pod restarts a member known to have
	// started (its data is on the pod's claim); 0 otherwise. It is written into the pod's
	// AnnotationMemberID, from which member-init learns that the member's data dir must not
	// be empty.
	MemberID uint64
	// PeerURLs are the peer URLs etcd lists for members of InitialCluster (by ordinal) that
	// are not PeerURL: members added before the member Services, on the headless name. Every
	// other member (and every member the operator adds from now on) is at PeerURL.
	PeerURLs map[int]string
	// ForceNewCluster starts etcd with --force-new-cluster: the member, on its own data,
	// becomes a cluster of one, every other member dropped from its membership. Only for the
	// one survivor of a quorum lost for good, and only until it has started so: a restart
	// with the flag after others have joined would drop them again.
	ForceNewCluster bool
}

// ImageFor returns the etcd image of a version: <repository>:v<version>.
func ImageFor(repository, version string) string {
	return repository + ":v" + NormalizeVersion(version)
}

// NormalizeVersion drops the optional leading "v" of a spec.version (naming.NormalizeVersion).
func NormalizeVersion(version string) string { return naming.NormalizeVersion(version) }

// ClusterToken is the unique --initial-cluster-token of a cluster.
func ClusterToken(c *api.EtcdCluster) string {
	return c.Name + "-" + string(c.UID)
}

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

// OwnerReference makes the cluster the controlling owner of an object, so that deleting the
// cluster deletes it and its events map back to the cluster.
func OwnerReference(c *api.EtcdCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(c, api.SchemeGroupVersion.WithKind("EtcdCluster"))
}

// Pod builds the pod of one member from the cluster's spec and the template. initImage is
// the operator's own image, from which a joining member's init container copies member-init.
// A joining member's etcd is held back (by the operator binary's member-init) until the
// member is in the member list, so etcd never starts with a configuration the cluster would
// reject, and never asks DNS for a name before it exists. The seed of a new cluster starts at
// once.
func Pod(c *api.EtcdCluster, t Template, initImage string) *corev1.Pod {
	name := Name(c.Name, t.Ordinal)
	ns := c.Namespace
	policy := c.Spec.Pod
	if policy == nil {
		policy = &api.PodPolicy{}
	}

	// The operator's own labels win over the pod policy's.
	podLabels := map[string]string{}
	maps.Copy(podLabels, policy.Labels)
	maps.Copy(podLabels, ClusterLabels(c.Name))
	podLabels[LabelMember] = name
	annotations := map[string]string{}
	maps.Copy(annotations, policy.Annotations)
	annotations[AnnotationClusterState] = string(t.ClusterState)
	if t.MemberID != 0 {
		annotations[AnnotationMemberID] = FormatID(t.MemberID)
	}
	recordPolicyKeys(annotations, policy)

	version := t.Version
	if version == "" {
		version = c.Spec.Version
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       ns,
			Labels:          podLabels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{OwnerReference(c)},
		},
		Spec: corev1.PodSpec{
			Hostname:           name,
			Subdomain:          PeerServiceName(c.Name),
			RestartPolicy:      corev1.RestartPolicyAlways,
			EnableServiceLinks: ptr.To(false),
			// The pods talk to etcd only; they need no API credentials.
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{etcdContainer(c, t, policy, version)},
			Volumes:                      []corev1.Volume{dataVolume(c, t.Ordinal)},
			NodeSelector:                 maps.Clone(policy.NodeSelector),
			Affinity:                     affinity(c.Name, policy.Affinity),
			SecurityContext:              podSecurityContext(policy.SecurityContext),
			PriorityClassName:            policy.PriorityClassName,
		},
	}
	for _, tol := range policy.Tolerations {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, *tol.DeepCopy())
	}
	// Every member's etcd container runs member-init first. It execs etcd at once for the
	// seed of a new cluster and for a member whose data dir holds data, and once the member is
	// added for a joining one (see package memberinit for why it waits there and not in an
	// init container). It also refuses to start etcd on an empty data dir for a member known to
	// have started: the seed would bootstrap a new, empty cluster, any other member would
	// crash raft.
	_, livePath := probePaths(version)
	wrapInMemberInit(c, t, pod, initImage, livePath)
	// Last, over the finished spec: see AnnotationTemplateHash.
	pod.Annotations[AnnotationTemplateHash] = specHash(&pod.Spec)
	return pod
}

// FormatID writes an etcd member ID the way etcd and the operator print it (naming.FormatID).
func FormatID(id uint64) string { return naming.FormatID(id) }

// ParseID reads an ID written by FormatID; 0 when s is not one (naming.ParseID).
func ParseID(s string) uint64 { return naming.ParseID(s) }

// etcdContainer is the container that runs the member's etcd (of the given version).
func etcdContainer(c *api.EtcdCluster, t Template, policy *api.PodPolicy, version string) corev1.Container {
	readyPath, livePath := probePaths(version)
	return corev1.Container{
		Name:            EtcdContainerName,
		Image:           ImageFor(c.Spec.Repository, version),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{EtcdBinary},
		Args:            etcdArgs(c, t),
		Env:             userEnv(policy.Env),
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "peer", ContainerPort: PeerPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:    resources(policy.Resources),
		VolumeMounts: []corev1.VolumeMount{{Name: DataVolumeName, MountPath: DataMountPath}},
		// Probed every second: a member's comeback (after a restart, and before a rollout's
		// next member) waits for it.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     httpProbe(readyPath),
			PeriodSeconds:    1,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		},
		// Generous: restarting a slow but live member only makes it slower.
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        httpProbe(livePath),
			InitialDelaySeconds: 10,
			PeriodSeconds:       10,
			TimeoutSeconds:      15,
			FailureThreshold:    8,
		},
		SecurityContext:          restrictedContainer(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// peerURL is the peer URL of the member with the given ordinal, as the template knows it.
func (t Template) peerURL(c *api.EtcdCluster, ordinal int) string {
	if u, ok := t.PeerURLs[ordinal]; ok {
		return u
	}
	return PeerURL(c.Name, c.Namespace, ordinal)
}

// etcdArgs are the flags of the member's etcd.
func etcdArgs(c *api.EtcdCluster, t Template) []string {
	initial := make([]string, 0, len(t.InitialCluster))
	for _, o := range t.InitialCluster {
		initial = append(initial, Name(c.Name, o)+"="+t.peerURL(c, o))
	}
	self := t.peerURL(c, t.Ordinal)
	args := []string{
		"--name=" + Name(c.Name, t.Ordinal),
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-peer-urls=http://0.0.0.0:%d", PeerPort),
		fmt.Sprintf("--listen-client-urls=http://0.0.0.0:%d", ClientPort),
		"--advertise-client-urls=" + ClientURLOf(self),
		"--initial-advertise-peer-urls=" + self,
		initialClusterFlag + strings.Join(initial, ","),
		"--initial-cluster-state=" + string(t.ClusterState),
		"--initial-cluster-token=" + ClusterToken(c),
	}
	args = append(args, quotaArgs(&c.Spec)...)
	if t.ForceNewCluster {
		args = append(args, forceNewClusterFlag)
	}
	return args
}

// initialClusterFlag is the prefix of etcd's --initial-cluster argument, which ReadTemplate
// reads back.
const initialClusterFlag = "--initial-cluster="

// forceNewClusterFlag is etcd's flag for Template.ForceNewCluster, which ReadTemplate reads
// back.
const forceNewClusterFlag = "--force-new-cluster"

// wrapInMemberInit makes a joining member's etcd container wait for the member to be added:
// an init container copies the operator binary into a volume, and the etcd container runs it
// as `member-init ... -- etcd <flags>`. member-init asks the other members named in
// t.InitialCluster, answers the liveness probe while it waits, and execs etcd when the member
// is listed, or at once when the data dir already holds the member.
func wrapInMemberInit(c *api.EtcdCluster, t Template, pod *corev1.Pod, initImage, livePath string) {
	var endpoints []string
	for _, o := range t.InitialCluster {
		if o != t.Ordinal {
			endpoints = append(endpoints, ClientURLOf(t.peerURL(c, o)))
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
		LivenessAddr: fmt.Sprintf(":%d", ClientPort),
		LivenessPath: livePath,
		MemberIDFile: PodInfoDir + "/" + MemberIDFileName,
		Exec:         append(slices.Clone(etcd.Command), etcd.Args...),
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
	pod.Spec.InitContainers = []corev1.Container{{
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
	}}
}

// ReadTemplate reads back the template a member pod of the named cluster was built from.
// ok is false when the pod is not one of the cluster's member pods. Pods of earlier operator
// versions read the same way: the cluster state is in the annotation, the initial cluster in
// etcd's own argument (after member-init's `--` for a joining member).
func ReadTemplate(cluster string, p *corev1.Pod) (t Template, ok bool) {
	t.Ordinal, ok = Ordinal(cluster, p.Name)
	if !ok {
		return Template{}, false
	}
	t.ClusterState = etcdutil.ClusterState(p.Annotations[AnnotationClusterState])
	t.MemberID = ParseID(p.Annotations[AnnotationMemberID])
	for _, ctr := range p.Spec.Containers {
		if ctr.Name != EtcdContainerName {
			continue
		}
		t.Version = versionOf(ctr.Image)
		for _, a := range etcdArgv(ctr) {
			if a == forceNewClusterFlag || a == forceNewClusterFlag+"=true" {
				t.ForceNewCluster = true
			}
			list, found := strings.CutPrefix(a, initialClusterFlag)
			if !found {
				continue
			}
			for _, kv := range strings.Split(list, ",") {
				name, u, _ := strings.Cut(kv, "=")
				o, ok := Ordinal(cluster, name)
				if !ok {
					continue
				}
				t.InitialCluster = append(t.InitialCluster, o)
				if u != PeerURL(cluster, p.Namespace, o) {
					if t.PeerURLs == nil {
						t.PeerURLs = map[int]string{}
					}
					t.PeerURLs[o] = u
				}
			}
			slices.Sort(t.InitialCluster)
		}
	}
	return t, true
}

// etcdArgv is the command line etcd runs with in the container: member-init's command after
// its `--`, or the container's own.
func etcdArgv(ctr corev1.Container) []string {
	argv := append(slices.Clone(ctr.Command), ctr.Args...)
	if i := slices.Index(argv, "--"); i >= 0 && slices.Equal(ctr.Command, []string{MemberInitPath}) {
		return argv[i+1:]
	}
	return argv
}

// versionOf is the version of an image built by ImageFor ("" for any other image).
func versionOf(image string) string {
	i := strings.LastIndex(image, ":v")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	return image[i+2:]
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

// probePaths picks the health endpoints: /readyz and /livez exist from etcd 3.6 on; older
// versions only have /health.
func probePaths(version string) (ready, live string) {
	major, minor := majorMinor(version)
	if major > 3 || (major == 3 && minor >= 6) {
		return "/readyz", "/livez"
	}
	return "/health", "/health?serializable=true"
}

func majorMinor(version string) (int, int) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(parts[1])
	return major, minor
}

func httpProbe(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: intstr.FromInt32(ClientPort), Scheme: corev1.URISchemeHTTP,
	}}
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
