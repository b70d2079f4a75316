package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The seed's pod deleted right after it was made, before the cluster was seen serving: the
// pod made ahead goes, then the seed is made again. A pod marked with its started member says
// the cluster served: nothing is deleted or made.
func TestSyncBootstrapsAgain(t *testing.T) {
	c := newCluster(3)
	ahead := member.Pod(c, member.Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}, "x")
	f := newFixture(t, c, ahead, member.PeerService(c), member.ClientService(c))
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	dels := f.actions("delete", "pods")
	if len(dels) != 1 || dels[0].(k8stesting.DeleteAction).GetName() != "demo-1" {
		t.Fatalf("deletes %v, want demo-1", dels)
	}
	_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Delete(ahead)
	f.kube.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	creates := f.actions("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("%d pods created, want the seed", len(creates))
	}
	if p := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod); p.Name != "demo-0" ||
		p.Annotations[member.AnnotationClusterState] != string(etcdutil.ClusterStateNew) {
		t.Errorf("created %s (%s), want the seed demo-0", p.Name, p.Annotations[member.AnnotationClusterState])
	}

	started := ahead.DeepCopy()
	started.Annotations[member.AnnotationMemberID] = member.FormatID(0xbeef)
	f = newFixture(t, c, started, member.PeerService(c), member.ClientService(c))
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := len(f.actions("delete", "pods")) + len(f.actions("create", "pods")); n != 0 {
		t.Errorf("%d pods deleted or created in a cluster that served", n)
	}
}
