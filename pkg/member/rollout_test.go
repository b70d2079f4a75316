package member

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

func TestUpToDate(t *testing.T) {
	tmpl := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, MemberID: 0xab}
	built := Pod(testCluster(), tmpl, "op:1")

	cases := []struct {
		name    string
		change  func(c *api.EtcdCluster)
		version string
		image   string
		want    bool
	}{
		{name: "same spec", version: "3.6.16", image: "op:1", want: true},
		{name: "new patch version", version: "3.6.17", image: "op:1", want: false},
		{name: "new operator image", version: "3.6.16", image: "op:2", want: false},
		{name: "resource request", version: "3.6.16", image: "op:1", want: false, change: func(c *api.EtcdCluster) {
			c.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
		}},
		{name: "node selector", version: "3.6.16", image: "op:1", want: false, change: func(c *api.EtcdCluster) {
			c.Spec.Pod.NodeSelector = map[string]string{"disk": "nvme"}
		}},
		{name: "label only: patched, not rolled", version: "3.6.16", image: "op:1", want: true, change: func(c *api.EtcdCluster) {
			c.Spec.Pod.Labels = map[string]string{"team": "b"}
		}},
		{name: "annotation only: patched, not rolled", version: "3.6.16", image: "op:1", want: true, change: func(c *api.EtcdCluster) {
			c.Spec.Pod.Annotations = map[string]string{"a": "b"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			if tc.change != nil {
				tc.change(c)
			}
			if got := UpToDate(c, built, tc.version, tc.image); got != tc.want {
				t.Errorf("UpToDate = %v, want %v", got, tc.want)
			}
		})
	}

	old := built.DeepCopy()
	delete(old.Annotations, AnnotationTemplateHash)
	if UpToDate(testCluster(), old, "3.6.16", "op:1") {
		t.Error("a pod without a recorded hash (earlier operator) is up to date")
	}
}

func TestPolicyMetadataPatch(t *testing.T) {
	c := testCluster()
	c.Spec.Pod.Annotations = map[string]string{"keep": "1", "drop": "1"}
	p := Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "op:1")
	p.Labels["injected"] = "by-someone-else"

	if patch := PolicyMetadataPatch(c, p); !patch.Empty() {
		t.Fatalf("patch of a pod built from the same spec: %+v", patch)
	}

	c.Spec.Pod.Labels = map[string]string{"team": "b", "tier": "db"}
	c.Spec.Pod.Annotations = map[string]string{"keep": "1"}
	patch := PolicyMetadataPatch(c, p)
	if v := patch.Labels["team"]; v == nil || *v != "b" {
		t.Errorf("team label: %v", patch.Labels)
	}
	if v := patch.Labels["tier"]; v == nil || *v != "db" {
		t.Errorf("tier label: %v", patch.Labels)
	}
	if v, ok := patch.Annotations["drop"]; !ok || v != nil {
		t.Errorf("annotation removed from spec.pod is not removed: %v", patch.Annotations)
	}
	if _, ok := patch.Labels["injected"]; ok {
		t.Errorf("a label spec.pod never set is touched: %v", patch.Labels)
	}
	if _, ok := patch.Labels[LabelCluster]; ok {
		t.Errorf("an operator label is touched: %v", patch.Labels)
	}
	if _, ok := patch.Annotations[AnnotationPolicyKeys]; !ok {
		t.Errorf("the recorded policy keys are not updated: %v", patch.Annotations)
	}
}
