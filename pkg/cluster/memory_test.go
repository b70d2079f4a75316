package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// What a pass decides from status when status is gone (cleared with kubectl edit
// --subresource=status, or never written): docs/design.md, "What status remembers".

// A cluster on emptyDir that served (its etcd cluster ID recorded on the object) and whose
// pods all went is not bootstrapped again empty when its status is cleared: the recorded ID
// says it served.
func TestSyncClearedStatusDoesNotBootstrapAgain(t *testing.T) {
	c := newCluster(3)
	c.Spec.Storage = member.LegacyStorage()
	c.Annotations = map[string]string{api.AnnotationClusterID: member.FormatID(0xc1)}
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("create", "pods")); n != 0 {
		t.Errorf("%d pods created: a cluster that served was bootstrapped again, empty", n)
	}
}

// A single member on a claim that runs etcd 3.5 with spec.version set to 3.7 (a skipped minor,
// refused): with status cleared, the version the cluster runs is what its member answers, and
// the member's pod is left on 3.5, not restarted on 3.7 over a log 3.7 cannot replay.
func TestSyncClearedStatusKeepsTheRunningVersion(t *testing.T) {
	c := newCluster(1)
	c.Spec.Storage = member.DefaultStorage()
	c.Spec.Version = "3.5.35"
	pod := memberPod(c, 0, "10.0.0.1", corev1.PodRunning, time.Now().Add(-time.Hour), &discoveryv1.EndpointSlice{})
	pod.Annotations[member.AnnotationMemberID] = "1"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pvc := member.Claim(c, 0)
	pvc.Annotations[member.AnnotationMemberID] = "1"
	pvc.Status.Phase = corev1.ClaimBound
	c.Spec.Version = "3.7.3"
	f := newFixture(t, c, pod, pvc, member.PeerService(c), member.ClientService(c))
	etcd := newFakeEtcd(t, c, "10.0.0.1")
	etcd.status[member.PodClientURL("10.0.0.1", member.ClientTLS(c))] = etcdutil.Status{ID: 1, Leader: 1, Version: "3.5.35", RaftIndex: 9, RaftAppliedIndex: 9}
	f.with(func(d *Deps) { d.Etcd = etcd })
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("delete", "pods")) + len(f.actions("patch", "pods")); n != 0 {
		t.Errorf("the member's pod was rolled (%d deletes or patches) to a version the operator refuses: %v", n,
			append(f.actions("delete", "pods"), f.actions("patch", "pods")...))
	}
}
