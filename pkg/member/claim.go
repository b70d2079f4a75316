package member

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// AnnotationMemberID records, on a member's claim and pod, the etcd ID of the member whose data
// the volume holds, in hexadecimal. The operator writes it once it sees the member in etcd's
// member list, before any step that could remove that member. On a claim it says whose data
// the claim holds: a claim of a member that is no longer in the cluster is replaced before its
// ordinal joins again, and a claim of a member still listed is restarted in place. On a pod it
// reaches member-init through the downward API: a member known to have started never starts
// etcd on an empty data dir.
const AnnotationMemberID = "etcd.operator.dev/member-id"

// AnnotationRemoved flags, on a member's claim, the member it is marked with
// (AnnotationMemberID) as removed from etcd, in hexadecimal. The operator writes it before it
// removes that member, and on every other member's claim before it restarts a survivor with
// --force-new-cluster (which drops them all): from then on the claim holds the data of no
// member of the cluster, and a pass without a member list does not count it as one that status
// may have missed.
const AnnotationRemoved = "etcd.operator.dev/member-removed"

// AnnotationDataRanOn records, on a member's claim, the newest etcd minor release
// ("major.minor") the member whose data the claim holds (AnnotationMemberID) has been seen
// running on, healthy and voting, with its log applied. The operator writes it from 3.7 on,
// the first release that cannot replay every log entry an older one wrote: a member whose
// claim says its data has run on 3.7 has no such entry left and restarts on it when it goes
// back up to 3.7 (a downgrade to 3.6 cancelled, or done and undone); a claim without it is
// not known to and its member is replaced. It is cleared once the data may run on a release
// older than 3.6 (a downgrade to 3.5), which writes entries 3.7 cannot replay.
const AnnotationDataRanOn = "etcd.operator.dev/data-ran-on"

// DefaultClaimSize fits etcd's default 2Gi backend quota with room for its write-ahead log and
// snapshots.
var DefaultClaimSize = resource.MustParse("4Gi")

// DefaultStorage is the storage of a new cluster whose spec has none: a DefaultClaimSize claim
// per member on the default StorageClass, kept when the cluster is deleted and deleted with a
// scale-down.
func DefaultStorage() *api.StorageSpec {
	return &api.StorageSpec{
		VolumeClaimTemplate: &api.VolumeClaimTemplate{Spec: api.ClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: DefaultClaimSize},
			},
		}},
		RetentionPolicy: &api.RetentionPolicy{WhenDeleted: api.RetentionRetain, WhenScaled: api.RetentionDelete},
	}
}

// LegacyStorage is the storage of a cluster created before claims existed: the emptyDir its
// members already run on.
func LegacyStorage() *api.StorageSpec {
	return &api.StorageSpec{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

// HasClaims reports whether the spec keeps member data on claims.
func HasClaims(spec *api.EtcdClusterSpec) bool {
	return spec.Storage != nil && spec.Storage.VolumeClaimTemplate != nil
}

// Retention is the spec's retention policy with its defaults filled in.
func Retention(spec *api.EtcdClusterSpec) api.RetentionPolicy {
	p := api.RetentionPolicy{WhenDeleted: api.RetentionRetain, WhenScaled: api.RetentionDelete}
	if spec.Storage != nil && spec.Storage.RetentionPolicy != nil {
		if r := spec.Storage.RetentionPolicy.WhenDeleted; r != "" {
			p.WhenDeleted = r
		}
		if r := spec.Storage.RetentionPolicy.WhenScaled; r != "" {
			p.WhenScaled = r
		}
	}
	return p
}

// ClaimName is the name of the claim that holds the data of the member with the given ordinal
// (naming.ClaimName).
func ClaimName(cluster string, ordinal int) string { return naming.ClaimName(cluster, ordinal) }

// Claim builds the claim of one member from the spec's volumeClaimTemplate (which must be set).
// The cluster never owns it: what becomes of it when the cluster is deleted is whenDeleted's
// to say at that moment (the operator deletes it under the cluster's finalizer when it says
// Delete), not an ownerReference written earlier. Kept, an EtcdCluster of the same name finds
// it again by its name and labels.
func Claim(c *api.EtcdCluster, ordinal int) *corev1.PersistentVolumeClaim {
	tmpl := c.Spec.Storage.VolumeClaimTemplate
	name := Name(c.Name, ordinal)
	labels := map[string]string{}
	maps.Copy(labels, tmpl.Metadata.Labels)
	maps.Copy(labels, ClusterLabels(c.Name))
	labels[LabelMember] = name
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClaimName(c.Name, ordinal),
			Namespace:   c.Namespace,
			Labels:      labels,
			Annotations: map[string]string{},
		},
		Spec: claimSpec(tmpl.Spec),
	}
	maps.Copy(pvc.Annotations, tmpl.Metadata.Annotations)
	pvc.Annotations[AnnotationClaimTemplate] = templateHash(tmpl.Spec)
	pvc.Annotations[AnnotationPeerScheme] = peerScheme(c)
	return pvc
}

// AnnotationPeerScheme records on a claim the scheme of the peer URLs its member was made
// with ("http" or "https"): etcd keeps its members' peer URLs in its data, so a member started
// on the claim listens as its peers will dial it only with the same scheme. A claim without it
// was made before TLS existed: "http".
const AnnotationPeerScheme = "etcd.operator.dev/peer-scheme"

// AnnotationPeerMove records on a claim, while the cluster's peers move on or off TLS, the
// endpoints its member's pod listens on for the hop under way (peermove.Listen.String): it is
// written before any pod is rolled or peer URL moved for the hop, so a pod made while no member
// answers listens where the members' URLs may be. It is removed once the move is done, and
// AnnotationPeerScheme says the new scheme.
const AnnotationPeerMove = "etcd.operator.dev/peer-move"

// ClaimPeerScheme is the peer scheme the claim's data was made with (AnnotationPeerScheme).
func ClaimPeerScheme(pvc *corev1.PersistentVolumeClaim) string {
	if s := pvc.Annotations[AnnotationPeerScheme]; s != "" {
		return s
	}
	return "http"
}

// PeerScheme is the scheme of the cluster's peer URLs by its spec.
func PeerScheme(c *api.EtcdCluster) string { return peerScheme(c) }

func claimSpec(s api.ClaimSpec) corev1.PersistentVolumeClaimSpec {
	modes := s.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	fs := corev1.PersistentVolumeFilesystem
	out := corev1.PersistentVolumeClaimSpec{
		AccessModes:               append([]corev1.PersistentVolumeAccessMode(nil), modes...),
		Resources:                 *s.Resources.DeepCopy(),
		StorageClassName:          s.StorageClassName,
		VolumeMode:                &fs,
		VolumeAttributesClassName: s.VolumeAttributesClassName,
	}
	if s.Selector != nil {
		out.Selector = s.Selector.DeepCopy()
	}
	return out
}

// ClaimMatches reports whether an existing claim was made from the spec's template as it is
// now. Only an unbound claim can be out of date: a cluster's storage cannot change once it has
// started, but may be fixed while its first claim waits for a volume. The claim records what
// it was made from (AnnotationClaimTemplate): the API server fills in what the template left
// out, the default StorageClass, so the claim's own spec cannot tell.
func ClaimMatches(c *api.EtcdCluster, have *corev1.PersistentVolumeClaim) bool {
	if recorded, ok := have.Annotations[AnnotationClaimTemplate]; ok {
		return recorded == templateHash(c.Spec.Storage.VolumeClaimTemplate.Spec)
	}
	want := claimSpec(c.Spec.Storage.VolumeClaimTemplate.Spec)
	if want.StorageClassName != nil && (have.Spec.StorageClassName == nil || *have.Spec.StorageClassName != *want.StorageClassName) {
		return false
	}
	return equality.Semantic.DeepEqual(have.Spec.AccessModes, want.AccessModes) &&
		have.Spec.Resources.Requests.Storage().Cmp(*want.Resources.Requests.Storage()) == 0 &&
		equality.Semantic.DeepEqual(have.Spec.Selector, want.Selector)
}

// AnnotationClaimTemplate records on a claim a hash of the template spec it was made from.
const AnnotationClaimTemplate = "etcd.operator.dev/claim-template"

// templateHash is a short hash of a claim template's spec.
func templateHash(s api.ClaimSpec) string {
	b, _ := json.Marshal(claimSpec(s))
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}
