package member

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// AnnotationClusterState records the --initial-cluster-state the pod's etcd starts with
// (Template.ClusterState).
const AnnotationClusterState = "etcd.operator.dev/initial-cluster-state"

// AnnotationReadyRestarts records on a member pod its etcd container's restart count when the
// operator last saw the container ready: the restarts beyond it are the current run of
// trouble, the ones before (a node rebooted, a rollout) are not a crash loop. A pod is made with
// 0; the operator writes it again when it sees the container ready after a restart, and, on a
// pod made without it (by an earlier operator), the count it first sees.
const AnnotationReadyRestarts = "etcd.operator.dev/ready-restarts"

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
	// PeerListen is what the pod's etcd listens on for its peers; empty means the peer port
	// as spec.tls asks. It differs from the spec while a running cluster's peers move on or
	// off TLS (package peermove).
	PeerListen peermove.Listen
	// Client is how the pod serves its client port; empty means as spec.tls.client asks. It
	// differs from the spec while a running cluster's client port moves on or off TLS.
	Client ClientMode
	// DialTLS: with Client ClientDual, member-init dials the other members over TLS. It is
	// what the operator dialled the cluster with when it made the pod.
	DialTLS bool
	// Restore, for the seed of a new cluster (ClusterStateNew) only, is the snapshot its data
	// dir is restored from before its first start.
	Restore *Restore
	// MaxLearners is the number of learners the member's etcd lets the membership hold
	// (etcdfacts.MaxLearnersFlag); 0 leaves the flag out, as pods made before it were, and so
	// does a version without it (3.5, which holds one learner and refuses the flag). It is
	// read back from the pod like the rest of the template, so a pod made without it stays up
	// to date: only pods made from now on carry it.
	MaxLearners int
	// Trust is what the member's Secret trusts as the pod is made (TrustStamp), recorded in
	// AnnotationTrust; empty records nothing.
	Trust string
}

// Restore is a snapshot a new cluster's seed is restored from: a file of a claim, which the
// seed's pod mounts read-only, or an object of an S3 bucket, which an init container of the
// seed's pod downloads.
type Restore struct {
	// ClaimName is the claim that holds the snapshot, empty for S3; Key the file's path in
	// it, or the object's key.
	ClaimName, Key string
	// S3 is the bucket that holds the snapshot, zero for a claim.
	S3 S3Source
	// SHA256 is the snapshot's, as its EtcdBackup recorded it; empty when the restore names
	// the key alone (the init container then checks the one stored beside the object).
	SHA256 string
	// BumpRevision and MarkCompacted are spec.bootstrap.fromBackup's.
	BumpRevision  int64
	MarkCompacted bool
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

// OwnerReference makes the cluster the controlling owner of an object, so that deleting the
// cluster deletes it and its events map back to the cluster.
func OwnerReference(c *api.EtcdCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(c, api.SchemeGroupVersion.WithKind("EtcdCluster"))
}

// Pod builds the pod of one member from the cluster's spec and the template. initImage is
// the operator's own image, from which a joining member's init container copies member-init.
// A joining member's etcd is held back (by the agent binary's member-init) until the
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

	podLabels, annotations := podMeta(c, t, policy)
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
	if t.peerListen(c).TLS() || t.clientMode(c).TLS() {
		pod.Spec.Volumes = append(pod.Spec.Volumes, tlsVolume(c, t.Ordinal))
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
	wrapInMemberInit(c, t, pod, initImage, livePath, probePort(t.clientMode(c)))
	// Last, over the finished spec: see AnnotationTemplateHash.
	pod.Annotations[AnnotationTemplateHash] = specHash(&pod.Spec)
	return pod
}

// podMeta is the member pod's labels and annotations: the pod policy's, the operator's own
// (which win over the policy's) and the template's.
func podMeta(c *api.EtcdCluster, t Template, policy *api.PodPolicy) (podLabels, annotations map[string]string) {
	podLabels = map[string]string{}
	maps.Copy(podLabels, policy.Labels)
	maps.Copy(podLabels, ClusterLabels(c.Name))
	podLabels[LabelMember] = Name(c.Name, t.Ordinal)
	podLabels[LabelMetricsPort] = MetricsPortOf(t.clientMode(c))
	annotations = map[string]string{}
	maps.Copy(annotations, policy.Annotations)
	annotations[AnnotationClusterState] = string(t.ClusterState)
	annotations[AnnotationReadyRestarts] = "0"
	if t.MemberID != 0 {
		annotations[AnnotationMemberID] = FormatID(t.MemberID)
	}
	if t.Trust != "" {
		annotations[AnnotationTrust] = t.Trust
	}
	recordPolicyKeys(annotations, policy)
	return podLabels, annotations
}

// FormatID writes an etcd member ID the way etcd and the operator print it (naming.FormatID).
func FormatID(id uint64) string { return naming.FormatID(id) }

// ParseID reads an ID written by FormatID; 0 when s is not one (naming.ParseID).
func ParseID(s string) uint64 { return naming.ParseID(s) }

// ReadTemplate reads back the template a member pod of the named cluster was built from.
// ok is false when the pod is not one of the cluster's member pods. Pods of earlier operator
// versions read the same way: the cluster state is in the annotation, the initial cluster in
// etcd's own argument (after member-init's `--` for a joining member). A member of the initial
// cluster is at its PeerURL when the pod names it there with the scheme of the pod's own peer
// listener (the first, while the peers move: Template.peerURL), so the pod says it.
func ReadTemplate(cluster string, p *corev1.Pod) (t Template, ok bool) {
	t.Ordinal, ok = Ordinal(cluster, p.Name)
	if !ok {
		return Template{}, false
	}
	t.ClusterState = etcdutil.ClusterState(p.Annotations[AnnotationClusterState])
	t.Restore = readRestore(p)
	t.MemberID = ParseID(p.Annotations[AnnotationMemberID])
	t.Trust = p.Annotations[AnnotationTrust]
	for _, ctr := range p.Spec.Containers {
		if ctr.Name != EtcdContainerName {
			continue
		}
		t.Version = versionOf(ctr.Image)
		argv := etcdArgv(ctr)
		t.PeerListen = readPeerListen(argv)
		t.Client = readClientMode(argv)
		if o, err := memberinit.Parse(memberInitArgs(ctr)); err == nil && t.Client == ClientDual {
			t.DialTLS = !o.TLS.IsZero()
		}
		for _, a := range argv {
			if a == forceNewClusterFlag || a == forceNewClusterFlag+"=true" {
				t.ForceNewCluster = true
			}
			if v, found := strings.CutPrefix(a, etcdfacts.MaxLearnersFlag+"="); found {
				t.MaxLearners, _ = strconv.Atoi(v)
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
				if u != t.PeerListen[0].URL(Host(cluster, p.Namespace, o)) {
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

// memberInitArgs are member-init's arguments in the container's command line (its flags, `--`
// and etcd's command); none when the container does not run member-init.
func memberInitArgs(ctr corev1.Container) []string {
	if !slices.Equal(ctr.Command, []string{MemberInitPath}) || len(ctr.Args) == 0 || ctr.Args[0] != MemberInitCommand {
		return nil
	}
	return ctr.Args[1:]
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
