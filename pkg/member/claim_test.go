package member

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

func claimCluster(whenDeleted api.RetentionPolicyType) *api.EtcdCluster {
	c := testCluster()
	c.Spec.Storage = DefaultStorage()
	c.Spec.Storage.RetentionPolicy.WhenDeleted = whenDeleted
	c.Spec.Storage.VolumeClaimTemplate.Metadata.Labels = map[string]string{"backup": "daily", LabelCluster: "spoofed"}
	return c
}

func TestClaim(t *testing.T) {
	c := claimCluster(api.RetentionRetain)
	pvc := Claim(c, 2)
	if pvc.Name != "data-demo-2" || pvc.Namespace != "prod" {
		t.Errorf("claim %s/%s, want prod/data-demo-2", pvc.Namespace, pvc.Name)
	}
	if pvc.Labels["backup"] != "daily" || pvc.Labels[LabelCluster] != "demo" || pvc.Labels[LabelMember] != "demo-2" {
		t.Errorf("labels %v: the template's, then the operator's (which win)", pvc.Labels)
	}
	if len(pvc.OwnerReferences) != 0 {
		t.Errorf("whenDeleted Retain: owner references %v, want none", pvc.OwnerReferences)
	}
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) ||
		pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem ||
		pvc.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("4Gi")) != 0 || pvc.Spec.StorageClassName != nil {
		t.Errorf("spec %+v: want ReadWriteOnce, Filesystem, 4Gi, the default class", pvc.Spec)
	}
	// Not even under Delete: an ownerReference would delete the claim with the cluster after
	// a later switch to Retain (the operator deletes it itself, under the cluster's finalizer).
	if owned := Claim(claimCluster(api.RetentionDelete), 0); len(owned.OwnerReferences) != 0 {
		t.Errorf("whenDeleted Delete: owner references %v, want none", owned.OwnerReferences)
	}
}

func TestPodDataVolume(t *testing.T) {
	tmpl := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}
	onClaim := Pod(claimCluster(api.RetentionRetain), tmpl, "op:1")
	if got := DataClaim(onClaim); got != "data-demo-1" {
		t.Errorf("pod of a cluster with claims keeps its data on %q, want data-demo-1", got)
	}
	c := testCluster()
	c.Spec.Storage = LegacyStorage()
	if got := DataClaim(Pod(c, tmpl, "op:1")); got != "" {
		t.Errorf("pod of an emptyDir cluster keeps its data on claim %q", got)
	}
	// member-init reads the member ID through the downward API.
	var found bool
	for _, v := range onClaim.Spec.Volumes {
		if v.Name == PodInfoVolumeName && v.DownwardAPI != nil &&
			v.DownwardAPI.Items[0].FieldRef.FieldPath == "metadata.annotations['"+AnnotationMemberID+"']" {
			found = true
		}
	}
	if !found {
		t.Errorf("no downward-API volume with the member ID: %+v", onClaim.Spec.Volumes)
	}
	if got, _ := argValue(onClaim.Spec.Containers[0].Args, "--member-id-file"); got != PodInfoDir+"/"+MemberIDFileName {
		t.Errorf("member-init --member-id-file = %q, want the downward-API file", got)
	}
}

func TestClaimMatches(t *testing.T) {
	c := claimCluster(api.RetentionRetain)
	have := Claim(c, 0)
	// What the API server fills in does not make a claim out of date.
	have.Spec.StorageClassName = ptr.To("local-path")
	if !ClaimMatches(c, have) {
		t.Error("a claim made from the template does not match it")
	}
	// A claim made for a class that does not exist, fixed back to the default class.
	withClass := c.DeepCopy()
	withClass.Spec.Storage.VolumeClaimTemplate.Spec.StorageClassName = ptr.To("no-such-class")
	if ClaimMatches(c, Claim(withClass, 0)) {
		t.Error("a claim made for class no-such-class matches a template for the default class")
	}
	for name, change := range map[string]func(*api.EtcdCluster){
		// The claim was made for the default class, which the API server wrote in.
		"class": func(c *api.EtcdCluster) {
			c.Spec.Storage.VolumeClaimTemplate.Spec.StorageClassName = ptr.To("local-path")
		},
		"size": func(c *api.EtcdCluster) {
			c.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("8Gi")
		},
		"modes": func(c *api.EtcdCluster) {
			c.Spec.Storage.VolumeClaimTemplate.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
		},
		"selector": func(c *api.EtcdCluster) { c.Spec.Storage.VolumeClaimTemplate.Spec.Selector = &metav1.LabelSelector{} },
	} {
		fixed := c.DeepCopy()
		change(fixed)
		if ClaimMatches(fixed, have) {
			t.Errorf("%s changed: the old claim still matches", name)
		}
	}
}
