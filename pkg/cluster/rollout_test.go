package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The pass sees which pods are out of date: another version, another spec.pod, another
// operator image; labels alone are stale metadata, not an outdated pod.
func TestStateMarksOutdatedPods(t *testing.T) {
	c := newCluster(3)
	c.Spec.Version, c.Status.CurrentVersion = "3.6.16", "3.6.16"
	o := observed(c)
	o.initImage = "x"
	if s := o.state(time.Now()); s.Pods[0].Outdated || s.Pods[0].StaleMetadata || s.Pods[0].Version != "3.6.16" {
		t.Fatalf("pods built from the spec: %+v", s.Pods[0])
	}

	c.Spec.Version = "3.7.3"
	if s := o.state(time.Now()); !s.Pods[0].Outdated || !s.Pods[0].ImageOnly || s.TargetVersion != "3.7.3" {
		t.Errorf("a new minor, the image alone: pod %+v, target %s", s.Pods[0], s.TargetVersion)
	}
	c.Spec.Version = "3.8.0"
	if s := o.state(time.Now()); s.Pods[0].Outdated || s.TargetVersion != "3.6.16" {
		t.Errorf("a refused step keeps the running version: pod %+v, target %s", s.Pods[0], s.TargetVersion)
	}

	c.Spec.Version = "3.6.16"
	c.Spec.Pod = &api.PodPolicy{Labels: map[string]string{"team": "a"}}
	if s := o.state(time.Now()); s.Pods[0].Outdated || !s.Pods[0].StaleMetadata {
		t.Errorf("a new label: %+v", s.Pods[0])
	}
	c.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if s := o.state(time.Now()); !s.Pods[0].Outdated || s.Pods[0].ImageOnly {
		t.Errorf("a new resource request: %+v", s.Pods[0])
	}

	c.Spec.Pod = nil
	o.initImage = "operator:next"
	if s := o.state(time.Now()); !s.Pods[0].Outdated {
		t.Errorf("a new operator image: %+v", s.Pods[0])
	}
}

func TestPatchPodMetadata(t *testing.T) {
	c := newCluster(3)
	c.Spec.Pod = &api.PodPolicy{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"old": "1"}}
	p := member.Pod(c, member.Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}, "x")
	p.UID = "pod-uid"
	f := newFixture(t, c, p)

	c.Spec.Pod = &api.PodPolicy{Labels: map[string]string{"team": "b"}}
	res, err := f.r.patchPodMetadata(context.Background(), c, p)
	if err != nil || !res.Changed {
		t.Fatalf("patch: %+v, %v", res, err)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "b" || got.Labels[member.LabelMember] != p.Name {
		t.Errorf("labels after the patch: %v", got.Labels)
	}
	if _, ok := got.Annotations["old"]; ok {
		t.Errorf("an annotation removed from spec.pod is still there: %v", got.Annotations)
	}
	if got.Annotations[member.AnnotationTemplateHash] != p.Annotations[member.AnnotationTemplateHash] {
		t.Errorf("the template hash changed: %v", got.Annotations)
	}
	if !member.PolicyMetadataPatch(c, got).Empty() {
		t.Errorf("the patched pod still differs from the spec: %+v", member.PolicyMetadataPatch(c, got))
	}
	if e := drain(f.recorder); !strings.Contains(e, string(EventPodPatched)) {
		t.Errorf("events %q: no %s", e, EventPodPatched)
	}
}

// A member pod made by an operator that did not label its metrics port (or whose label was
// changed) is stale metadata, not out of date: it gets the label in place, from the mode its
// etcd serves, with its spec and template hash untouched, and is then in line.
func TestMetricsPortLabelPatchedInPlace(t *testing.T) {
	c := newCluster(3)
	c.Spec.Version, c.Status.CurrentVersion = "3.6.16", "3.6.16"
	o := observed(c)
	o.initImage = "x"
	delete(o.pods[0].Labels, member.LabelMetricsPort)
	o.pods[1].Labels[member.LabelMetricsPort] = member.MetricsPortName
	s := o.state(time.Now())
	for ord, want := range []bool{true, true, false} {
		if pv := s.Pods[ord]; pv.StaleMetadata != want || pv.Outdated {
			t.Errorf("pod %d: stale metadata %v, outdated %v; want stale %v, not outdated", ord, pv.StaleMetadata, pv.Outdated, want)
		}
	}

	for _, p := range []*corev1.Pod{o.pods[0], o.pods[1]} {
		p.UID = "pod-uid"
		f := newFixture(t, c, p)
		res, err := f.r.patchPodMetadata(context.Background(), c, p)
		if err != nil || !res.Changed {
			t.Fatalf("patch of %s: %+v, %v", p.Name, res, err)
		}
		got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := got.Labels[member.LabelMetricsPort]; v != member.ClientPortName {
			t.Errorf("%s: %s=%q after the patch, want %q", p.Name, member.LabelMetricsPort, v, member.ClientPortName)
		}
		if got.Annotations[member.AnnotationTemplateHash] != p.Annotations[member.AnnotationTemplateHash] || !equality.Semantic.DeepEqual(got.Spec, p.Spec) {
			t.Errorf("%s: the patch changed the pod's spec or template hash", p.Name)
		}
		if mp := member.MetadataPatchFor(c, got); !mp.Empty() {
			t.Errorf("%s: the patched pod still needs %+v", p.Name, mp)
		}
	}
}

// A member whose etcd image alone is out of date gets the new image in its pod: the pod is
// up to date after the patch, and says which container ran when it was changed.
func TestRestartInPlace(t *testing.T) {
	c := newCluster(3)
	c.Spec.Version = "3.6.16"
	p := member.Pod(c, member.Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}, testInitImage)
	p.UID = "pod-uid"
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.EtcdContainerName, ContainerID: "containerd://old",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	f := newFixture(t, c, p)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f.r.now = func() time.Time { return now }

	c.Spec.Version = "3.7.3"
	res, err := f.r.restartInPlace(context.Background(), c, p, member.Target{Version: "3.7.3"}, "test")
	if err != nil || !res.Changed {
		t.Fatalf("restart in place: %+v, %v", res, err)
	}
	got, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := got.Spec.Containers[0].Image; img != member.ImageFor(c.Spec.Repository, "3.7.3") {
		t.Errorf("image after the patch: %s", img)
	}
	if got.Spec.Containers[0].Command[0] != member.MemberInitPath || len(got.Spec.InitContainers) != 1 {
		t.Errorf("the patch changed more than the image: %+v", got.Spec.Containers[0].Command)
	}
	if !member.UpToDate(c, got, member.Target{Version: "3.7.3"}, testInitImage) {
		t.Error("the patched pod is not up to date")
	}
	if got.Annotations[member.AnnotationRestartedFrom] != "containerd://old" || got.Annotations[member.AnnotationRestartedAt] != "2026-01-01T12:00:00Z" {
		t.Errorf("annotations: %v", got.Annotations)
	}
	if !member.RestartPending(got) {
		t.Error("the old container still runs, and the restart is not pending")
	}
	if e := drain(f.recorder); !strings.Contains(e, string(EventMemberRolled)) || !strings.Contains(e, "in place") {
		t.Errorf("events %q: no %s in place", e, EventMemberRolled)
	}

	// Nothing left to change: no second patch.
	if res, err := f.r.restartInPlace(context.Background(), c, got, member.Target{Version: "3.7.3"}, "test"); err != nil || res.Changed {
		t.Errorf("a second restart of an up-to-date pod: %+v, %v", res, err)
	}
}

// Rolling a member deletes its pod and records one Event saying which member and why.
func TestActRollMember(t *testing.T) {
	c := newCluster(3)
	fc := &fakeActor{result: Result{Changed: true}}
	rec := record.NewFakeRecorder(10)
	r := &Reconciler{deps: Deps{Log: quietLog(), Recorder: rec}, control: fc}
	if _, err := r.act(context.Background(), c, observed(c), plan.Decision{Action: &plan.Action{Kind: plan.ActionRollMember, Ordinal: 1, MemberID: 101},
		Message: "restarting member demo-1 on its data"}); err != nil {
		t.Fatal(err)
	}
	if len(fc.calls) != 1 || fc.calls[0] != "DeletePod demo-1" {
		t.Errorf("calls %q", fc.calls)
	}
	if e := drain(rec); !strings.Contains(e, string(EventMemberRolled)) || !strings.Contains(e, "demo-1") {
		t.Errorf("events %q: no %s for demo-1", e, EventMemberRolled)
	}
}

func drain(rec *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// Status shows each member's version and whether its pod is current, and a rollout as the
// RollingOut phase with its Progressing reason.
func TestStatusDuringRollout(t *testing.T) {
	c := newCluster(3)
	c.Spec.Version = "3.7.3"
	s := plan.State{Name: c.Name, Size: 3, Bootstrapped: true, MembersKnown: true, Version: "3.6.16", TargetVersion: "3.7.3",
		Members:  []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
		Pods:     plantest.Pods(plantest.Rolled(0, "3.6.16", true, time.Hour), plantest.Rolled(1, "3.6.16", true, time.Hour), plantest.Rolled(2, "3.7.3", false, time.Second)),
		Statuses: map[int]etcdutil.Status{0: plantest.Reporting(0, "3.6.16", 1000), 1: plantest.Reporting(1, "3.6.16", 1000)}}
	d := plan.Plan(s)
	st := status.Compute(c, s, d)
	want := map[string]struct {
		version string
		current bool
	}{"demo-0": {"3.6.16", false}, "demo-1": {"3.6.16", false}, "demo-2": {"", true}}
	for _, m := range st.Members {
		if w := want[m.Name]; m.Version != w.version || m.PodCurrent != w.current {
			t.Errorf("member %s: version %q current %v, want %q %v", m.Name, m.Version, m.PodCurrent, w.version, w.current)
		}
	}
	if st.Phase != api.PhaseRollingOut {
		t.Errorf("phase %s, want %s", st.Phase, api.PhaseRollingOut)
	}
	prog := meta.FindStatusCondition(st.Conditions, string(api.ConditionProgressing))
	if prog == nil || prog.Reason != string(api.ReasonUpgrading) || !strings.Contains(prog.Message, "demo-2") {
		t.Errorf("Progressing = %+v, want Upgrading naming demo-2", prog)
	}
	if deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded)); deg == nil || deg.Reason == string(api.ReasonVersionChangeUnsupported) {
		t.Errorf("Degraded = %+v: a one-minor upgrade is supported", deg)
	}

	// Member 2's image changed in place and the kubelet still runs the old container: its
	// pod is not current yet, and the rollout is under way.
	p := s.Pods[2]
	p.RestartPending = true
	s.Pods[2] = p
	s.Members[2] = plantest.Voter(2)
	s.Statuses[2] = plantest.Reporting(2, "3.6.16", 1000)
	st = status.Compute(c, s, plan.Plan(s))
	for _, m := range st.Members {
		if m.Name == "demo-2" && m.PodCurrent {
			t.Error("a pod whose old container still runs is current")
		}
	}
	if st.Phase != api.PhaseRollingOut {
		t.Errorf("phase with the restart pending: %s, want %s", st.Phase, api.PhaseRollingOut)
	}
}
