package cluster

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// withClusterIDs makes the fake members answer with cluster ID own, except the one at
// foreignIP, which answers for another cluster.
func withClusterIDs(etcd *fakeEtcd, own uint64, foreignIP string) {
	for ep, st := range etcd.status {
		st.ClusterID = own
		if u, err := url.Parse(ep); err == nil && u.Hostname() == foreignIP {
			st.ClusterID = own + 1
		}
		etcd.status[ep] = st
	}
}

func ourPod(c *api.EtcdCluster) *corev1.Pod {
	p := member.Pod(c, member.Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "x")
	p.UID = "pod-uid-0"
	return p
}

// The cluster ID is written on the EtcdCluster from the first member list.
func TestSyncRecordsClusterID(t *testing.T) {
	f, etcd, _ := threeMembers(t, ourPod)
	withClusterIDs(etcd, 0xc1, "")
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// The fake clientset's status update writes the whole object back: the patch is read.
	patches := f.actions("patch", "etcdclusters")
	if len(patches) != 1 {
		t.Fatalf("%d patches of the cluster, want 1", len(patches))
	}
	patch := string(patches[0].(k8stesting.PatchAction).GetPatch())
	if !strings.Contains(patch, `"`+api.AnnotationClusterID+`":"c1"`) || !strings.Contains(patch, `"uid":"uid-1"`) {
		t.Errorf("patch %s, want the cluster ID c1 recorded on the cluster with this UID", patch)
	}
}

// A member pod whose IP answers for another etcd cluster is not counted as a member that
// answered, and is reported.
func TestSyncDoesNotCountAForeignEndpoint(t *testing.T) {
	f, etcd, _ := threeMembers(t, func(c *api.EtcdCluster) *corev1.Pod {
		c.Annotations = map[string]string{api.AnnotationClusterID: "c1"}
		return ourPod(c)
	})
	withClusterIDs(etcd, 0xc1, "10.244.0.9")
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got, err := f.client.EtcdV1alpha1().EtcdClusters("ns").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got.Status.Members {
		if m.Name == "demo-0" && m.Ready {
			t.Errorf("member demo-0 counted ready though its IP answers for another cluster")
		}
	}
	if got.Status.ReadyMembers != 2 {
		t.Errorf("readyMembers = %d, want 2", got.Status.ReadyMembers)
	}
	if deg := degradedOf(t, f); deg == nil || !strings.Contains(deg.Message, "answers for etcd cluster c2") {
		t.Errorf("Degraded = %+v, want it to name the foreign endpoint", deg)
	}
}

// Against two real etcd clusters: a membership change offered an endpoint of the other
// cluster is never sent there; offered both, it goes to the cluster's own member only.
func TestMembershipRefusesAnotherCluster(t *testing.T) {
	t.Parallel()
	ours := etcdtest.StartCluster(t, 1)
	theirs := etcdtest.StartCluster(t, 2)
	ctx := context.Background()
	factory := etcdutil.NewFactory(0, 0)
	cli, err := factory.New(etcdtest.ClientURLs(append(ours, theirs...)...), etcdutil.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	own, err := cli.Status(ctx, ours[0].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(3)
	c.Annotations = map[string]string{api.AnnotationClusterID: member.FormatID(own.ClusterID)}
	m, _ := newControl(factory, kubefake.NewClientset())
	members := func(m *etcdtest.Member) []etcdutil.Member {
		t.Helper()
		one, err := factory.New([]string{m.ClientURL}, etcdutil.ConnConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		list, err := one.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	if _, err := m.AddLearner(ctx, c, []string{theirs[0].ClientURL}, 1, member.PeerURL(c, 1)); !errors.Is(err, etcdutil.ErrForeignCluster) {
		t.Errorf("add learner through the other cluster = %v, want ErrForeignCluster", err)
	}
	if _, err := m.RemoveMember(ctx, c, []string{theirs[0].ClientURL}, 1, theirs[1].ID(), "x"); !errors.Is(err, etcdutil.ErrForeignCluster) {
		t.Errorf("remove through the other cluster = %v, want ErrForeignCluster", err)
	}
	var leader, follower *etcdtest.Member = theirs[0], theirs[1]
	if st, err := cli.Status(ctx, theirs[1].ClientURL); err == nil && st.Leader == st.ID {
		leader, follower = theirs[1], theirs[0]
	}
	if _, err := m.MoveLeader(ctx, c, leader.ClientURL, 0, follower.ID()); !errors.Is(err, etcdutil.ErrForeignCluster) {
		t.Errorf("move leader in the other cluster = %v, want ErrForeignCluster", err)
	}
	if n := len(members(theirs[0])); n != 2 {
		t.Errorf("the other cluster has %d members, want its 2 untouched", n)
	}
	if st, err := cli.Status(ctx, leader.ClientURL); err != nil || st.Leader != st.ID {
		t.Errorf("the other cluster's leader moved: %+v, %v", st, err)
	}

	// etcd may refuse a change for a few seconds after it started: retried as a pass would.
	deadline := time.Now().Add(etcdtest.ReadyTimeout)
	res, err := m.AddLearner(ctx, c, []string{theirs[0].ClientURL, ours[0].ClientURL}, 1, member.PeerURL(c, 1))
	for err == nil && res.RetryIn > 0 && time.Now().Before(deadline) {
		time.Sleep(res.RetryIn)
		res, err = m.AddLearner(ctx, c, []string{theirs[0].ClientURL, ours[0].ClientURL}, 1, member.PeerURL(c, 1))
	}
	if err != nil || !res.Changed {
		t.Fatalf("add learner offered both clusters = %+v, %v; want it added to this one", res, err)
	}
	if n := len(members(ours[0])); n != 2 {
		t.Errorf("this cluster has %d members, want 2 (the learner added)", n)
	}
	if n := len(members(theirs[0])); n != 2 {
		t.Errorf("the other cluster has %d members, want its 2 untouched", n)
	}
}
