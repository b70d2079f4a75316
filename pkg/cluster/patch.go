package cluster

// The patches the operator sends, built in one place from typed parts. Every patch carries
// the UID of the object it was computed from: the API server refuses it with a conflict
// when the object of that name is another (a newer one), so it never lands on the wrong one.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// objectPatch is a merge patch (JSON merge patch, or a strategic merge patch of a pod) of an
// object's metadata, and of its spec when Spec is set.
type objectPatch struct {
	Metadata patchMeta `json:"metadata"`
	Spec     any       `json:"spec,omitempty"`
}

// patchMeta is the part of metadata a patch sets. A nil annotation or label value removes
// the key.
type patchMeta struct {
	// UID is the precondition: the patch lands on the object with this UID only.
	UID types.UID `json:"uid"`
	// ResourceVersion, when set, is a further precondition: the object as it was read.
	ResourceVersion string             `json:"resourceVersion,omitempty"`
	Labels          map[string]*string `json:"labels,omitempty"`
	Annotations     map[string]*string `json:"annotations,omitempty"`
	// OwnerReferences replaces the whole list (an empty list drops every owner).
	OwnerReferences *[]metav1.OwnerReference `json:"ownerReferences,omitempty"`
	// Finalizers replaces the whole list (an empty list drops every finalizer): sent only
	// with the resourceVersion precondition, so that a finalizer another controller added
	// meanwhile is never dropped.
	Finalizers *[]string `json:"finalizers,omitempty"`
}

// clusterSpecPatch is the part of an EtcdCluster's spec the operator fills in.
type clusterSpecPatch struct {
	Storage *api.StorageSpec `json:"storage"`
}

// servicePortsPatch replaces a Service's ports.
type servicePortsPatch struct {
	Ports []corev1.ServicePort `json:"ports"`
}

// budgetSpecPatch sets a PodDisruptionBudget's minAvailable and drops its maxUnavailable.
type budgetSpecPatch struct {
	MinAvailable   *intstr.IntOrString `json:"minAvailable"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
}

// podSpecPatch changes the image of one container of a pod (a strategic merge patch: the
// container is matched by name).
type podSpecPatch struct {
	Containers []containerImage `json:"containers"`
}

type containerImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// patchOf starts a patch of the object with the given UID.
func patchOf(uid types.UID) *objectPatch { return &objectPatch{Metadata: patchMeta{UID: uid}} }

// asRead adds the resourceVersion precondition.
func (p *objectPatch) asRead(resourceVersion string) *objectPatch {
	p.Metadata.ResourceVersion = resourceVersion
	return p
}

// annotate sets an annotation.
func (p *objectPatch) annotate(key, value string) *objectPatch {
	return p.annotations(map[string]*string{key: &value})
}

// unannotate removes an annotation.
func (p *objectPatch) unannotate(key string) *objectPatch {
	return p.annotations(map[string]*string{key: nil})
}

func (p *objectPatch) annotations(m map[string]*string) *objectPatch {
	if p.Metadata.Annotations == nil {
		p.Metadata.Annotations = map[string]*string{}
	}
	for k, v := range m {
		p.Metadata.Annotations[k] = v
	}
	return p
}

// metadata sets and removes the labels and annotations mp says.
func (p *objectPatch) metadata(mp member.MetadataPatch) *objectPatch {
	p.Metadata.Labels = mp.Labels
	return p.annotations(mp.Annotations)
}

// owners replaces the owner references.
func (p *objectPatch) owners(refs []metav1.OwnerReference) *objectPatch {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	p.Metadata.OwnerReferences = &refs
	return p
}

// finalizers replaces the finalizers.
func (p *objectPatch) finalizers(list []string) *objectPatch {
	if list == nil {
		list = []string{}
	}
	p.Metadata.Finalizers = &list
	return p
}

// spec sets the patch's spec part.
func (p *objectPatch) spec(s any) *objectPatch {
	p.Spec = s
	return p
}

// encode is the patch's body.
func (p *objectPatch) encode() ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	return b, nil
}
