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
			if got := UpToDate(c, built, Target{Version: tc.version}, tc.image); got != tc.want {
				t.Errorf("UpToDate = %v, want %v", got, tc.want)
			}
		})
	}

	old := built.DeepCopy()
	delete(old.Annotations, AnnotationTemplateHash)
	if UpToDate(testCluster(), old, Target{Version: "3.6.16"}, "op:1") {
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

func TestImageChange(t *testing.T) {
	tmpl := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, MemberID: 0xab}
	built := Pod(testCluster(), tmpl, "op:1")

	cases := []struct {
		name    string
		change  func(c *api.EtcdCluster)
		version string
		image   string
		want    string
	}{
		{name: "same spec: nothing to change", version: "3.6.16", image: "op:1"},
		{name: "new patch version", version: "3.6.17", image: "op:1", want: "gcr.io/etcd-development/etcd:v3.6.17"},
		{name: "next minor, same probes", version: "3.7.3", image: "op:1", want: "gcr.io/etcd-development/etcd:v3.7.3"},
		{name: "3.5 has other probes: not the image alone", version: "3.5.35", image: "op:1"},
		{name: "another repository", version: "3.6.16", image: "op:1", want: "mirror.example/etcd:v3.6.16", change: func(c *api.EtcdCluster) {
			c.Spec.Repository = "mirror.example/etcd"
		}},
		{name: "new operator image: member-init's container changes too", version: "3.6.17", image: "op:2"},
		{name: "a new version and a resource request", version: "3.6.17", image: "op:1", change: func(c *api.EtcdCluster) {
			c.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			if tc.change != nil {
				tc.change(c)
			}
			image, hash, ok := ImageChange(c, built, Target{Version: tc.version}, tc.image)
			if ok != (tc.want != "") || image != tc.want {
				t.Fatalf("ImageChange = %q, %v; want %q", image, ok, tc.want)
			}
			if !ok {
				return
			}
			// The pod as the patch leaves it is up to date, and a second change from there
			// (the version set back) is an image change again.
			patched := built.DeepCopy()
			patched.Spec.Containers[0].Image = image
			patched.Annotations[AnnotationTemplateHash] = hash
			if !UpToDate(c, patched, Target{Version: tc.version}, tc.image) {
				t.Error("the pod with the new image and hash is not up to date")
			}
			if back, _, ok := ImageChange(testCluster(), patched, Target{Version: "3.6.16"}, "op:1"); !ok || back != built.Spec.Containers[0].Image {
				t.Errorf("changing back: %q, %v", back, ok)
			}
		})
	}

	old := built.DeepCopy()
	delete(old.Annotations, AnnotationTemplateHash)
	if _, _, ok := ImageChange(testCluster(), old, Target{Version: "3.6.17"}, "op:1"); ok {
		t.Error("a pod without a recorded hash (earlier operator) is changed in place")
	}
}

func TestRestartPending(t *testing.T) {
	p := Pod(testCluster(), Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "op:1")
	oldImage, newImage := "etcd:v3.6.16", p.Spec.Containers[0].Image
	status := func(id, image string) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: EtcdContainerName, ContainerID: id, Image: image,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	status("containerd://a", oldImage)
	if RestartPending(p) {
		t.Error("a pod never restarted in place is pending")
	}
	p.Annotations[AnnotationRestartedFrom] = "containerd://a"
	if !RestartPending(p) {
		t.Error("the container that ran at the change still runs: not pending")
	}
	status("containerd://a", "")
	if !RestartPending(p) {
		t.Error("the container that ran at the change still runs, its image not reported: not pending")
	}
	status("containerd://b", newImage)
	if RestartPending(p) {
		t.Error("a new container runs: still pending")
	}
	// The image set back before the kubelet restarted anything: the old container runs the
	// spec's image, and nothing will restart it.
	status("containerd://a", newImage)
	if RestartPending(p) {
		t.Error("the container runs the spec's image: still pending")
	}
	p.Status.ContainerStatuses = nil
	p.Annotations[AnnotationRestartedFrom] = ""
	if !RestartPending(p) {
		t.Error("changed before any container ran, none runs yet: not pending")
	}
}

// A pod without LabelMetricsPort (made by an earlier operator), or with another value, gets
// it patched in place, from the mode the pod serves rather than the spec's; spec.pod's labels
// and annotations are patched beside it; the template hash says the pod needs no restart.
func TestMetadataPatchForMetricsPort(t *testing.T) {
	tmpl := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}
	for _, tc := range []struct {
		name   string
		mode   ClientMode
		labels map[string]*string
		want   string
	}{
		{name: "plaintext, no label", mode: ClientPlain, want: "client"},
		{name: "client TLS, no label", mode: ClientSecure, want: "metrics"},
		{name: "both, no label", mode: ClientDual, want: "metrics"},
		{name: "client TLS, wrong label", mode: ClientSecure, labels: map[string]*string{LabelMetricsPort: ptrTo("client")}, want: "metrics"},
		{name: "plaintext, wrong label", mode: ClientPlain, labels: map[string]*string{LabelMetricsPort: ptrTo("metrics")}, want: "client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl.Client = tc.mode
			c := tlsCluster(false, false, "3.6.16")
			p := Pod(c, tmpl, "op:1")
			delete(p.Labels, LabelMetricsPort)
			for k, v := range tc.labels {
				p.Labels[k] = *v
			}
			// The spec asks for plaintext: the mode the pod serves wins.
			c.Spec.Pod.Labels = map[string]string{"team": "b"}
			patch := MetadataPatchFor(c, p)
			if v := patch.Labels[LabelMetricsPort]; v == nil || *v != tc.want {
				t.Errorf("patch %s = %v, want %q", LabelMetricsPort, v, tc.want)
			}
			if v := patch.Labels["team"]; v == nil || *v != "b" {
				t.Errorf("spec.pod's label is not patched beside it: %v", patch.Labels)
			}
			if !UpToDate(c, p, Target{Version: "3.6.16", Client: tc.mode}, "op:1") {
				t.Error("the label alone makes the pod out of date")
			}
		})
	}
}

func ptrTo(s string) *string { return &s }
