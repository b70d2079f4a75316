package member

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// AnnotationTemplateHash records, on a member pod, the hash of the pod spec it was built
// with (Pod writes it, RecordedHash reads it back). A pod whose hash differs from what the
// current spec would build for it is out of date and is rolled: restarted on its data, or
// replaced. The pod's labels and annotations are not in the hash: those of spec.pod are
// patched in place (PolicyMetadataPatch), since a restart would cost a leader election or a
// replacement for nothing the member's etcd can see.
const AnnotationTemplateHash = "etcd.operator.dev/template-hash"

// AnnotationPolicyKeys records which labels and annotations of a member pod came from
// spec.pod, so that one removed from spec.pod is removed from the pod too, while those that
// other controllers put on the pod are left alone.
const AnnotationPolicyKeys = "etcd.operator.dev/pod-policy-keys"

// hashLength is how many hex digits of the spec's SHA-256 are kept: enough that two
// templates never collide in practice, short enough to read in `kubectl get -o yaml`.
const hashLength = 16

// specHash is the hash of a pod spec as Pod builds it.
func specHash(spec *corev1.PodSpec) string {
	// json.Marshal of a PodSpec cannot fail: it holds no channels, funcs or cycles; maps are
	// written with sorted keys, so the hash is stable.
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:hashLength]
}

// RecordedHash is the hash a member pod was built with; empty for a pod of an operator
// version before the hash, which is therefore out of date once.
func RecordedHash(p *corev1.Pod) string {
	return p.Annotations[AnnotationTemplateHash]
}

// Target is what member pods are built with now besides the spec and their own template: the
// etcd version, how the client port is served (empty: as the spec asks), what the pod listens
// on for its peers (empty: as the spec asks), and what the pod's Secret trusts (TrustStamp;
// empty: not compared).
type Target struct {
	Version string
	Client  ClientMode
	Peer    peermove.Listen
	Trust   string
}

// UpToDate reports whether pod p was built from what the cluster's spec builds now for the
// same template (its ordinal, cluster state, initial cluster and member ID, read back from
// the pod) for the target, with the operator's image initImage, and trusts what the target
// says its Secret trusts now.
func UpToDate(c *api.EtcdCluster, p *corev1.Pod, target Target, initImage string) bool {
	t, ok := ReadTemplate(c.Name, p)
	if !ok || !trustCurrent(t.Trust, target.Trust) {
		return false
	}
	t.Version, t.Client, t.PeerListen = target.Version, target.Client, target.Peer
	want := Pod(c, t, initImage)
	return RecordedHash(p) != "" && RecordedHash(p) == RecordedHash(want)
}

// policyKeys are the label and annotation keys a pod got from spec.pod.
type policyKeys struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// recordPolicyKeys writes into the pod's annotations the keys its policy gave it.
func recordPolicyKeys(annotations map[string]string, policy *api.PodPolicy) {
	k := policyKeys{Labels: slices.Sorted(maps.Keys(policy.Labels)), Annotations: slices.Sorted(maps.Keys(policy.Annotations))}
	if len(k.Labels) == 0 && len(k.Annotations) == 0 {
		return
	}
	b, _ := json.Marshal(k)
	annotations[AnnotationPolicyKeys] = string(b)
}

// readPolicyKeys reads back what recordPolicyKeys wrote; none for an unreadable value.
func readPolicyKeys(p *corev1.Pod) policyKeys {
	var k policyKeys
	if v := p.Annotations[AnnotationPolicyKeys]; v != "" {
		_ = json.Unmarshal([]byte(v), &k)
	}
	return k
}

// MetadataPatch is a strategic-merge patch of a pod's labels and annotations: a nil value
// removes the key.
type MetadataPatch struct {
	Labels      map[string]*string `json:"labels,omitempty"`
	Annotations map[string]*string `json:"annotations,omitempty"`
}

// Empty: nothing to change.
func (m MetadataPatch) Empty() bool { return len(m.Labels) == 0 && len(m.Annotations) == 0 }

// PolicyMetadataPatch is what brings the labels and annotations of pod p from spec.pod in
// line with the cluster's spec: keys spec.pod sets now, and the removal of those it set
// before and no longer does. The operator's own keys are never touched (the CRD refuses
// spec.pod keys under etcd.operator.dev/, and Pod lets the operator's labels win).
func PolicyMetadataPatch(c *api.EtcdCluster, p *corev1.Pod) MetadataPatch {
	policy := c.Spec.Pod
	if policy == nil {
		policy = &api.PodPolicy{}
	}
	had := readPolicyKeys(p)
	out := MetadataPatch{
		Labels:      metadataDiff(p.Labels, policy.Labels, had.Labels, ClusterLabels(c.Name)),
		Annotations: metadataDiff(p.Annotations, policy.Annotations, had.Annotations, nil),
	}
	want := map[string]string{}
	recordPolicyKeys(want, policy)
	if want[AnnotationPolicyKeys] != p.Annotations[AnnotationPolicyKeys] {
		if out.Annotations == nil {
			out.Annotations = map[string]*string{}
		}
		if v, ok := want[AnnotationPolicyKeys]; ok {
			out.Annotations[AnnotationPolicyKeys] = &v
		} else {
			out.Annotations[AnnotationPolicyKeys] = nil
		}
	}
	return out
}

// MetadataPatchFor is what brings the labels and annotations of member pod p in line in place:
// those of spec.pod (PolicyMetadataPatch), and the operator's LabelMetricsPort, from the
// client mode p's etcd serves as read back from p (not from the spec: while the client port
// moves on or off TLS, pods serve different modes).
func MetadataPatchFor(c *api.EtcdCluster, p *corev1.Pod) MetadataPatch {
	out := PolicyMetadataPatch(c, p)
	t, ok := ReadTemplate(c.Name, p)
	if !ok {
		return out
	}
	if want := MetricsPortOf(t.Client); p.Labels[LabelMetricsPort] != want {
		if out.Labels == nil {
			out.Labels = map[string]*string{}
		}
		out.Labels[LabelMetricsPort] = &want
	}
	return out
}

// metadataDiff sets what want holds and have does not, and removes the keys in had that want
// no longer holds. Keys of the operator's own (reserved) are left as they are.
func metadataDiff(have, want map[string]string, had []string, reserved map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range want {
		if _, r := reserved[k]; r || operatorKey(k) {
			continue
		}
		if cur, ok := have[k]; !ok || cur != v {
			out[k] = &v
		}
	}
	for _, k := range had {
		if _, still := want[k]; still || operatorKey(k) {
			continue
		}
		if _, r := reserved[k]; r {
			continue
		}
		if _, ok := have[k]; ok {
			out[k] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// operatorKey: a label or annotation key the operator owns.
func operatorKey(k string) bool { return strings.HasPrefix(k, "etcd.operator.dev/") }

// AnnotationRestartedFrom and AnnotationRestartedAt are written on a member pod whose etcd
// container is restarted in place (ImageChange): the ID of the container that ran when the
// image was changed, and when. The member has come back once a container other than that
// one runs; the rollout's bound on its comeback counts from the time.
const (
	AnnotationRestartedFrom = "etcd.operator.dev/restarted-from"
	AnnotationRestartedAt   = "etcd.operator.dev/restarted-at"
)

// ImageChange reports whether pod p is brought up to date by a new image for its etcd
// container alone: what the spec builds now for the pod's template at the given version and
// with the operator's image initImage differs from what p was built with in that image only.
// Kubernetes lets a running pod's container image change; the kubelet then restarts the
// container in the same pod, on the same volumes (an emptyDir's data included) and address.
// It returns the image and the pod's template hash once it runs it. A pod that does not trust
// what its Secret trusts now is never changed in place: its etcd would read the CA files from
// a volume the kubelet may not have refreshed yet, and the pod would keep a record of what
// it trusts that is no longer so.
func ImageChange(c *api.EtcdCluster, p *corev1.Pod, target Target, initImage string) (image, hash string, ok bool) {
	t, ok := ReadTemplate(c.Name, p)
	if !ok || RecordedHash(p) == "" || !trustCurrent(t.Trust, target.Trust) {
		return "", "", false
	}
	t.Version, t.Client, t.PeerListen = target.Version, target.Client, target.Peer
	want := Pod(c, t, initImage)
	have := etcdImage(&p.Spec)
	image = etcdImage(&want.Spec)
	if have == "" || image == "" || have == image {
		return "", "", false
	}
	spec := want.Spec.DeepCopy()
	for i := range spec.Containers {
		if spec.Containers[i].Name == EtcdContainerName {
			spec.Containers[i].Image = have
		}
	}
	if specHash(spec) != RecordedHash(p) {
		return "", "", false
	}
	return image, RecordedHash(want), true
}

// etcdImage is the image of a pod spec's etcd container; empty when it has none.
func etcdImage(spec *corev1.PodSpec) string {
	for _, ctr := range spec.Containers {
		if ctr.Name == EtcdContainerName {
			return ctr.Image
		}
	}
	return ""
}

// EtcdContainerID is the ID of the etcd container the kubelet last reported for pod p, and
// whether that container is running.
func EtcdContainerID(p *corev1.Pod) (id string, running bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == EtcdContainerName {
			return cs.ContainerID, cs.State.Running != nil
		}
	}
	return "", false
}

// RestartPending reports whether pod p's etcd container was restarted in place (ImageChange)
// and the container that ran then is still the one the kubelet reports, on another image
// than the spec's. (An image set back before the kubelet acted restarts nothing: the
// container runs the spec's image.)
func RestartPending(p *corev1.Pod) bool {
	from, ok := p.Annotations[AnnotationRestartedFrom]
	if !ok {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == EtcdContainerName {
			return cs.ContainerID == from && !(cs.State.Running != nil && cs.Image == etcdImage(&p.Spec))
		}
	}
	return from == ""
}
